"""Inference passes over a ProgramDesc, in the spirit of Paddle Inference's analysis passes
and ONNX Runtime's graph optimizers: each rewrites the global block of a program whose
parameters are in a scope, keeping it serializable and loadable by Paddle (op types and
attributes Paddle defines), and computes the same outputs.

``apply(program, names=None, scope=None, place=None)`` runs the named passes in order
(default: :data:`INFERENCE_PASSES`) and returns ``{name: ops changed}``;
``headrace.io.load_inference_model(..., optimize=True)`` applies them to what it loads.
Passes rewrite weights (batch_norm folding, constant folding) into new persistable variables
of ``scope``, never in place: only the program given sees the change. Only inference
programs belong here: a training program's batch_norm statistics and dropout are live.
"""
from ..errors import HeadraceError
from ..runtime.place import CPUPlace
from ..runtime.scope import global_scope
from . import (bn_fold, constant_folding, conv_act_fuse, conv_bias_fuse, conv_residual_fuse,
               fc_fuse, identity_clean, matmul_to_mul)
from . import _graph
from ._graph import drop_unused_vars

__all__ = ["PASSES", "INFERENCE_PASSES", "apply"]

# name -> run(program, scope, place) -> number of ops changed
PASSES = {
    identity_clean.NAME: identity_clean.run,
    constant_folding.NAME: constant_folding.run,
    conv_bias_fuse.NAME: conv_bias_fuse.run,
    bn_fold.NAME: bn_fold.run,
    bn_fold.MUL_NAME: bn_fold.run_mul,
    matmul_to_mul.NAME: matmul_to_mul.run,
    fc_fuse.NAME: fc_fuse.run,
    conv_residual_fuse.NAME: conv_residual_fuse.run,
    conv_act_fuse.NAME: conv_act_fuse.run,
}

# The order matters: identities go first so that chains become adjacent; conv biases are
# bound before batch_norm folds into them; matmuls become muls, whose batch_norm becomes a
# bias add that fc_fuse then fuses; a residual add is taken into the conv once batch_norm no
# longer sits between; the activation after a biased (and residual) conv goes last.
INFERENCE_PASSES = [identity_clean.NAME, constant_folding.NAME, conv_bias_fuse.NAME,
                    bn_fold.NAME, matmul_to_mul.NAME, bn_fold.MUL_NAME, fc_fuse.NAME,
                    conv_residual_fuse.NAME, conv_act_fuse.NAME]


def apply(program, names=None, scope=None, place=None, keep=None):
    """Run the passes ``names`` (default :data:`INFERENCE_PASSES`) over ``program`` in order,
    with its parameters in ``scope`` (default: the global scope) and constant folding on
    ``place`` (default: the CPU). Returns ``{pass name: ops changed}``.

    ``keep``: names (or Variables) you will fetch, which keep their names and values. The
    fetch ops' targets are always kept; a program without fetch ops keeps, by default, the
    values no op reads (its results)."""
    names = list(INFERENCE_PASSES if names is None else
                 [names] if isinstance(names, str) else names)
    unknown = [n for n in names if n not in PASSES]
    if unknown:
        raise HeadraceError(f"unknown inference pass(es) {', '.join(map(repr, unknown))}: "
                            f"the passes are {', '.join(PASSES)}")
    scope = global_scope() if scope is None else scope
    place = CPUPlace() if place is None else place
    block = program.global_block()
    if keep is None:
        keep = () if any(op.type == "fetch" for op in block.ops) else \
            _graph.terminal_values(block)
    keep = {getattr(k, "name", k) for k in ([keep] if isinstance(keep, str) else keep)}
    setattr(program, _graph.KEEP_ATTR, frozenset(keep))
    try:
        done = {name: PASSES[name](program, scope, place) for name in names}
    finally:
        delattr(program, _graph.KEEP_ATTR)
    if any(done.values()):
        drop_unused_vars(program)
    return done
