"""Reverse-mode autodiff over a block: ``append_backward`` and ``gradients``.

The pass (1) finds the ops that lie between the variables that want gradients and the targets,
(2) asks each one's gradient maker, in reverse order, for backward ops, filling zeros for output
gradients that do not reach a target, (3) renames several contributions to one gradient to
``v@GRAD@RENAME@k`` and sums them before the gradient is read, and (4) appends the backward ops
(validated and shape-inferred like any op, with op_role = backward).
"""
from ..errors import HeadraceError
from ..framework.builder import dtype_enum
from ..framework.program import OP_ROLE_BACKWARD, OP_ROLE_LOSS
from ..framework.variable import Parameter, Variable
from ..ops.grad import EMPTY, GRAD_SUFFIX, GradContext, GradOp, grad_name

__all__ = ["append_backward", "gradients", "BackwardError"]


class BackwardError(HeadraceError):
    """A backward pass that cannot be built (bad loss, op without a gradient maker...)."""


def _names(vs):
    out = set()
    for v in vs or ():
        out.add(v.name if isinstance(v, Variable) else v)
    return out


def _forward_ops(block, targets):
    """Ops of ``block`` up to the last writer of a target, skipping backward/optimize ops."""
    last = -1
    for i, op in enumerate(block.ops):
        if targets & set(op.output_arg_names):
            last = i
    ops = []
    for op in block.ops[:last + 1]:
        role = op.attr("op_role") if op.has_attr("op_role") else 0
        if role & ~OP_ROLE_LOSS:
            continue
        ops.append(op)
    return ops


def _plan(ops, targets, sources, no_grad):
    """(ops to differentiate, names whose gradient is wanted)."""
    # Forward: which variables depend on a source (and so can carry a gradient)?
    wanted = set(sources)
    for op in ops:
        if op.opdef is None or not op.opdef.differentiable:
            continue
        if any(n in wanted for n in op.input_arg_names):
            wanted.update(n for n in op.output_arg_names if n not in no_grad)
    # Backward: which ops lead to a target?
    needed, chosen = set(targets), []
    for op in reversed(ops):
        outs = set(op.output_arg_names)
        if not (outs & needed):
            continue
        if not any(n in wanted for n in op.input_arg_names):
            continue
        if op.opdef is None:
            raise BackwardError(f"op '{op.type}' (block {op.block.idx}) has no installed "
                                f"definition, so it cannot be differentiated")
        if not op.opdef.differentiable:
            continue
        if op.opdef.grad is None:
            raise BackwardError(
                f"op '{op.type}' (block {op.block.idx}, op #{op.idx}) has no gradient maker"
                + (f"; created at {op.source}" if op.source else ""))
        chosen.append(op)
        needed.update(op.input_arg_names)
    wanted &= needed
    return chosen, wanted


def _grad_specs(chosen, wanted, seeds):
    """GradOp specs in execution order, zero-filling output gradients nobody produced."""
    specs, produced = [], set(seeds)
    for op in chosen:  # already in reverse order
        made = op.opdef.grad(GradContext(op, wanted, produced))
        # Zero-fill only the output gradients the grad ops read and nobody produced (outputs
        # that do not reach a target); intermediate outputs' gradients are never read.
        outs = set(op.output_arg_names)
        for spec in made:
            for names in spec.inputs.values():
                for g in names:
                    base = g[:-len(GRAD_SUFFIX)] if g.endswith(GRAD_SUFFIX) else None
                    if base in outs and g not in produced:
                        specs.append(GradOp("fill_zeros_like", {"X": [base]}, {"Out": [g]},
                                            {}))
                        produced.add(g)
        for spec in made:
            specs.append(spec)
            for names in spec.outputs.values():
                produced.update(n for n in names if n != EMPTY)
    return specs


def _sum_repeated(specs):
    """Rename repeated writes of one gradient and insert ``sum`` ops before it is read."""
    writers = {}
    for i, spec in enumerate(specs):
        for names in spec.outputs.values():
            for n in names:
                if n != EMPTY:
                    writers.setdefault(n, []).append(i)
    repeated = {n for n, ws in writers.items() if len(ws) > 1}
    if not repeated:
        return specs
    out, pending, counts = [], {}, {}
    for spec in specs:
        reads = {n for names in spec.inputs.values() for n in names}
        for n in sorted(reads & set(pending)):
            out.append(GradOp("sum", {"X": pending.pop(n)}, {"Out": [n]}, {}))
        outputs = {}
        for slot, names in spec.outputs.items():
            renamed = []
            for n in names:
                if n in repeated:
                    k = counts.get(n, 0)
                    counts[n] = k + 1
                    r = f"{n}@RENAME@{k}"
                    pending.setdefault(n, []).append(r)
                    renamed.append(r)
                else:
                    renamed.append(n)
            outputs[slot] = renamed
        out.append(GradOp(spec.type, spec.inputs, outputs, spec.attrs))
    for n, parts in pending.items():
        out.append(GradOp("sum", {"X": parts}, {"Out": [n]}, {}))
    return out


def _declare_grads(block, specs):
    """Declare every gradient variable like its forward variable before the ops need it."""
    for spec in specs:
        for names in spec.outputs.values():
            for n in names:
                if n == EMPTY or block.find_var(n) is not None:
                    continue
                base = n.split("@GRAD")[0]
                fwd = block.find_var(base)
                if fwd is not None and fwd.kind in ("lod_tensor", "lod_tensor_array"):
                    block.create_var(name=n, shape=fwd.shape, dtype=fwd.dtype,
                                     lod_level=fwd.lod_level, type=fwd.kind)


def _build(block, targets, seeds_ops, sources, no_grad):
    ops = _forward_ops(block, {t.name for t in targets})
    chosen, wanted = _plan(ops, {t.name for t in targets}, sources, no_grad)
    seeds = {grad_name(t.name) for t in targets}
    specs = seeds_ops + _grad_specs(chosen, wanted, seeds)
    specs = _sum_repeated(specs)
    program = block.program
    with program.op_role_guard(OP_ROLE_BACKWARD):
        _declare_grads(block, specs)
        for spec in specs:
            block.append_op(spec.type, spec.inputs, spec.outputs, spec.attrs)
    return wanted


def append_backward(loss, parameter_list=None, no_grad_set=None):
    """Append the backward pass of ``loss`` (shape [1]) to its program.

    Returns ``[(parameter, gradient variable)]`` for the trainable parameters that reach the
    loss (or those of ``parameter_list``). ``no_grad_set``: variables (or names) whose gradients
    are not computed; variables with ``stop_gradient`` are excluded too.
    """
    if not isinstance(loss, Variable):
        raise BackwardError(f"append_backward takes the loss Variable, got {type(loss).__name__}")
    if tuple(loss.shape) not in ((1,), ()):
        raise BackwardError(
            f"the loss '{loss.name}' must have shape [1] (e.g. the mean of the per-example "
            f"losses), found {list(loss.shape)}")
    block = loss.block
    if block.idx != 0:
        raise BackwardError("append_backward: the loss must be in the global block")
    program = block.program
    params = [p for p in program.all_parameters() if p.trainable]
    if parameter_list is not None:
        names = _names(parameter_list)
        params = [p for p in params if p.name in names]
    no_grad = _names(no_grad_set)
    no_grad |= {v.name for v in program.list_vars()
                if v.stop_gradient and not isinstance(v, Parameter)}
    sources = {p.name for p in params if p.name not in no_grad}
    seed = GradOp("fill_constant", {}, {"Out": [grad_name(loss.name)]},
                  {"shape": [1] if loss.shape else [], "value": 1.0,
                   "dtype": dtype_enum(loss.dtype), "op_role": OP_ROLE_BACKWARD | OP_ROLE_LOSS})
    wanted = _build(block, [loss], [seed], sources, no_grad)
    return [(p, block.var(grad_name(p.name))) for p in params if p.name in wanted]


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """Gradients of ``sum(targets * target_gradients)`` with respect to ``inputs``.

    Without ``target_gradients`` each target's gradient is ones. Returns one gradient variable
    per input (None where the input does not reach any target).
    """
    targets = [targets] if isinstance(targets, Variable) else list(targets)
    inputs = [inputs] if isinstance(inputs, Variable) else list(inputs)
    if target_gradients is not None:
        target_gradients = ([target_gradients] if isinstance(target_gradients, Variable)
                            else list(target_gradients))
        if len(target_gradients) != len(targets):
            raise BackwardError("gradients: one target gradient per target is needed")
    block = targets[0].block
    seeds = []
    for k, t in enumerate(targets):
        g = grad_name(t.name)
        given = target_gradients[k] if target_gradients is not None else None
        if given is None:
            seeds.append(GradOp("scale", {"X": [t.name]}, {"Out": [g]},
                                {"scale": 0.0, "bias": 1.0}))  # ones shaped like t
        else:
            seeds.append(GradOp("assign", {"X": [given.name]}, {"Out": [g]}, {}))
    no_grad = _names(no_grad_set)
    sources = {v.name for v in inputs} - no_grad
    wanted = _build(block, targets, seeds, sources, no_grad)
    return [block.var(grad_name(v.name)) if v.name in wanted else None for v in inputs]

