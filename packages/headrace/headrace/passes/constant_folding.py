"""constant_folding: ops whose inputs are all parameters (persistable values with nothing
fed into them) are run once, now, and their outputs become persistable variables holding the
results (ONNX Runtime's constant folding; Paddle Inference's constant_folding_pass). A
transpose or reshape of a weight, a scale of an embedding table, a fill_constant: each
inference step no longer recomputes them.

Folded: deterministic ops with kernels (no seed attribute, no sub-block, not feed/fetch),
every input persistable or produced by an op folded before, no output persistable already
(an op updating state in place is not a constant) nor written by another op. The folded ops
run in a copy of the program holding only them, on ``place``, in ``scope``.
"""
from ..framework.analysis import runs
from ..runtime.executor import Executor
from . import _graph

NAME = "constant_folding"


def _foldable(block, op, const):
    if op.type in _graph.HOLDERS or not runs(op) or op.opdef is None or op.sub_blocks():
        return False
    if op.opdef.seed_attr is not None or "seed" in op.attrs or not op.output_arg_names:
        return False
    if not all(n in const for n in op.input_arg_names):
        return False
    return all(not _graph.is_persistable(block, n) and len(_graph.writers(block, n)) == 1
               for n in op.output_arg_names)


def run(program, scope, place):
    block = program.global_block()
    const = {n for n, v in block.vars.items()
             if v.persistable and v.kind == "lod_tensor" and scope.find(n) is not None}
    const -= _graph.fed(block)
    folded = []
    for op in block.ops:
        if _foldable(block, op, const):
            folded.append(block.ops.index(op))
            const.update(op.output_arg_names)
    if not folded:
        return 0
    names = list(dict.fromkeys(n for i in folded for n in block.ops[i].output_arg_names))
    copy = program.clone()
    cblock = copy.global_block()
    keep = set(folded)
    for i in reversed(range(len(cblock.ops))):
        if i not in keep:
            cblock.remove_op(i)
    values = Executor(place).run(copy, fetch_list=names, scope=scope, return_numpy=False)
    for i in reversed(folded):
        block.remove_op(i)
    for name, value in zip(names, values):
        block.var(name).persistable = True
        scope.set(name, value)
    return len(folded)
