"""Reverse-mode autodiff over a block: ``append_backward`` and ``gradients``.

The pass (1) finds the ops that lie between the variables that want gradients and the targets,
(2) asks each one's gradient maker, in reverse order, for backward ops, filling zeros for output
gradients that do not reach a target, (3) renames several contributions to one gradient to
``v@GRAD@RENAME@k`` and sums them before the gradient is read, and (4) appends the backward ops
(validated and shape-inferred like any op, with op_role = backward).

Ops that own a block (``while``, ``conditional_block``) are differentiated through it: their
gradient makers call :meth:`GradContext.sub_block_grad`, which runs the same passes over the
sub-block into a new *gradient block* (see :func:`_sub_block_backward`); the grad op
(``while_grad``) runs that block once per kept step, in reverse.
"""
from ..callsite import pinned
from ..dtypes import FLOAT_DTYPES
from ..errors import HeadraceError
from ..framework.analysis import block_writes, reads, writes
from ..framework.builder import dtype_enum
from ..framework.gc_pause import pausing_gc
from ..framework.program import OP_ROLE_BACKWARD, OP_ROLE_LOSS
from .. import unique_name
from ..framework.variable import Parameter, Variable
from ..ops.grad import EMPTY, GRAD_SUFFIX, GradContext, GradOp, grad_name

__all__ = ["append_backward", "gradients", "BackwardError", "SubBlockGrad"]


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
    read, written = {}, {}   # id(op) -> reads(op) / writes(op), each worked out once here
    for op in ops:
        if op.opdef is None or not op.opdef.differentiable:
            continue
        # reads/writes: an op that owns a block also reads and writes what its block's ops
        # read and write (a parameter used only inside a loop body reaches the loss).
        op_reads = read[id(op)] = reads(op)
        if not wanted.isdisjoint(op_reads):
            op_writes = written[id(op)] = writes(op)
            wanted.update([n for n in op_writes if n not in no_grad] if no_grad else op_writes)
    # Backward: which ops lead to a target?
    needed, chosen = set(targets), []
    for op in reversed(ops):
        outs = written.get(id(op))
        if needed.isdisjoint(writes(op) if outs is None else outs):
            continue
        op_reads = read.get(id(op))
        if op_reads is None:
            op_reads = reads(op)
        if wanted.isdisjoint(op_reads):
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
        needed.update(op_reads)
    wanted &= needed
    return chosen, wanted


def _var(block, name):
    return block._find_var_recursive(name)


def _is_array(block, name):
    """Whether ``name`` (a gradient name is looked up by its forward variable) is a tensor
    array: array gradients are updated in place, position by position, by the ops that write
    them, so they are neither zero-filled nor renamed and summed."""
    v = _var(block, name.split(GRAD_SUFFIX)[0])
    return v is not None and v.kind == "lod_tensor_array"


def _grad_specs(chosen, wanted, seeds, no_grad, check=None, versions=None, in_step=False):
    """GradOp specs in execution order, zero-filling output gradients nobody produced.

    ``in_step``: the specs of a gradient block, where an array's gradient belongs to the
    enclosing block (shared by every step): it is zero-filled there, before the grad op."""
    specs, produced = [], set(seeds)
    for op in chosen:  # already in reverse order
        ctx = GradContext(op, wanted, produced)
        ctx.sub_block_grad = lambda attr, op=op: _sub_block_backward(op, attr, wanted, no_grad)
        made = op.opdef.grad(ctx)
        if check is not None:
            check(op, made)
        if versions is not None:
            made = versions.substitute(op, made)
        # Zero-fill only the output gradients the grad ops read and nobody produced (outputs
        # that do not reach a target); intermediate outputs' gradients are never read.
        out_grads = {n + GRAD_SUFFIX: n for n in writes(op)}   # gradient name -> output
        for spec in made:
            for names in spec.inputs.values():
                for g in names:
                    base = out_grads.get(g)
                    if base is not None and g not in produced and not (
                            in_step and _is_array(op.block, base)):
                        specs.append(GradOp("fill_zeros_like", {"X": [base]}, {"Out": [g]},
                                            {}))
                        produced.add(g)
        for spec in made:
            specs.append(spec)
            for names in spec.outputs.values():
                produced.update(n for n in names if n != EMPTY)
    return specs


def _sum_repeated(specs, block):
    """Rename repeated writes of one gradient and insert ``sum`` ops before it is read."""
    writers = {}
    for i, spec in enumerate(specs):
        for names in spec.outputs.values():
            for n in names:
                if n != EMPTY:
                    writers.setdefault(n, []).append(i)
    repeated = {n for n, ws in writers.items() if len(ws) > 1 and not _is_array(block, n)}
    if not repeated:
        return specs
    out, pending, counts = [], {}, {}
    for spec in specs:
        reads_ = {n for names in spec.inputs.values() for n in names}
        for n in sorted(reads_ & set(pending)):
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


def _declare_grads(block, specs, carried=()):
    """Declare every gradient variable like its forward variable before the ops need it: in
    ``block`` itself (a gradient block's gradients are per step), except array gradients,
    which live beside their array and are shared by every step."""
    for spec in specs:
        # An array's gradient may be read before anything wrote it (its grad ops then see
        # zeros), and a gradient block reads the gradients its grad op carries in: they are
        # declared like the written ones.
        read_arrays = [n for names in spec.inputs.values() for n in names
                       if n.endswith(GRAD_SUFFIX) and (_is_array(block, n) or n in carried)]
        for names in list(spec.outputs.values()) + [read_arrays]:
            for n in names:
                if n == EMPTY or n in block.vars:
                    continue
                fwd = _var(block, n.split("@GRAD")[0])
                if fwd is None:
                    continue
                m = fwd.meta()   # the forward VarDesc read once
                if m.kind not in ("lod_tensor", "lod_tensor_array"):
                    continue
                home = fwd.block if m.kind == "lod_tensor_array" else block
                if n not in home.vars:
                    home._declare_like(n, m)


def _append(block, specs, carried=()):
    program = block.program
    # Only headrace's frames lie between here and each op's prepare_op: the user's line
    # (op_callstack) is read once for all the grad ops.
    with program.op_role_guard(OP_ROLE_BACKWARD), pinned():
        _declare_grads(block, specs, set(carried))
        for spec in specs:
            block.append_op(spec.type, spec.inputs, spec.outputs, spec.attrs)


def _build(block, targets, seeds_ops, sources, no_grad):
    ops = _forward_ops(block, {t.name for t in targets})
    chosen, wanted = _plan(ops, {t.name for t in targets}, sources, no_grad)
    seeds = {grad_name(t.name) for t in targets}
    versions = _Versions(block, ops)
    specs = seeds_ops + _grad_specs(chosen, wanted, seeds, no_grad, versions=versions)
    versions.insert_copies()
    _append(block, _sum_repeated(specs, block))
    return wanted


class _Versions:
    """Keeps the values grad ops read when a later forward op overwrites them.

    A grad op reads forward values by name at backward time, when the name holds the last
    value written to it. If a forward op after ``op`` overwrites a variable ``op``'s gradient
    reads (a ``while`` updating its initial state in place, ``assign(..., output=v)``), the
    value ``op`` saw is copied, just before the first such writer, to ``<v>@SAVED@<k>`` and
    the grad op reads the copy (Paddle 3.3 reads the overwritten value here)."""

    def __init__(self, block, ops, restored=()):
        self.block = block
        self.restored = set(restored)  # a gradient block's grad op restores these itself
        self.position = {id(o): k for k, o in enumerate(block.ops)}
        self.writers = {}  # name -> block positions of the forward ops writing it
        for o in ops:
            for n in writes(o):
                self.writers.setdefault(n, []).append(self.position[id(o)])
        # name -> the position of its last writer: a name read at or after it keeps its
        # value (the usual), decided here without a _value_at call
        self.last = {n: max(ps) for n, ps in self.writers.items()}
        self.saved = {}  # (name, writer position) -> saved name

    def substitute(self, op, made):
        if op.sub_blocks():
            return made  # its grad op restores the values of its own steps
        at = self.position[id(op)]
        out, value_at, last = [], self._value_at, self.last
        for spec in made:
            inputs, changed = {}, False
            for slot, names in spec.inputs.items():
                inputs[slot] = values = [value_at(n, at) if last.get(n, -1) > at else n
                                         for n in names]
                changed = changed or values != names
            # (the usual: no value is overwritten later, the spec is kept as it is)
            out.append(GradOp(spec.type, inputs, spec.outputs, spec.attrs) if changed else spec)
        return out

    def _value_at(self, name, at):
        if GRAD_SUFFIX in name or name == EMPTY or name in self.restored:
            return name
        later = [p for p in self.writers.get(name, ()) if p > at]
        if not later:
            return name
        var = _var(self.block, name)
        if var is None or var.kind != "lod_tensor" or var.persistable:
            return name
        key = (name, later[0])
        if key not in self.saved:
            self.saved[key] = unique_name.generate(f"{name}@SAVED")
        return self.saved[key]

    def insert_copies(self):
        """Insert the ``assign`` copies (last position first, so positions stay valid)."""
        for (name, p), saved in sorted(self.saved.items(), key=lambda kv: -kv[0][1]):
            var = _var(self.block, name)
            self.block.create_var(name=saved, shape=var.shape, dtype=var.dtype,
                                  lod_level=var.lod_level)
            self.block.insert_op(p, "assign", {"X": [name]}, {"Out": [saved]})


class SubBlockGrad:
    """The gradient block of one op's sub-block, as :func:`_sub_block_backward` built it.

    ``block``: the gradient block (its parent is the forward sub-block, so its ops read the
    forward values of a step by name). ``outputs``: the outer variables the sub-block writes
    whose gradients flow back into it (the grad op reads their gradients, ``Out@GRAD``).
    ``inputs``: the outer variables whose gradients the gradient block computes (``X@GRAD``).
    """

    def __init__(self, block, inputs, outputs):
        self.block, self.inputs, self.outputs = block, inputs, outputs


def _carries_grad(block, name):
    v = _var(block, name)
    return v is not None and (v.kind == "lod_tensor_array" or
                              (v.kind == "lod_tensor" and v.dtype in FLOAT_DTYPES))


def _sub_block_backward(op, attr, wanted, no_grad):
    """Differentiate the block held by ``op``'s attribute ``attr`` into a new gradient block;
    None when nothing in it reaches a wanted output.

    One step of the block is a function of the outer variables it reads to the outer
    variables it writes: the targets are the written ones that carry a gradient outside,
    the sources the read ones that do (an outer variable the step both reads and writes,
    a loop-carried state, is both). Its grad op runs the gradient block per kept step with
    the step's forward values restored, feeding each step the gradient of the written
    variables from the step after it."""
    body = op.attr(attr)
    outer = op.block

    def visible(n):
        return n not in body.vars and _carries_grad(body, n)

    targets = [n for n in block_writes(body) if visible(n) and n in wanted]
    sources = {n for n in reads(op) if visible(n) and n in wanted} | set(targets)
    if not targets:
        return None
    ops = _forward_ops(body, set(targets))
    chosen, inner = _plan(ops, set(targets), sources, no_grad)
    if not chosen:
        return None
    versions = _Versions(body, ops, restored=targets)
    specs = _grad_specs(chosen, inner, {grad_name(t) for t in targets}, no_grad,
                        check=_StepHazards(body), versions=versions, in_step=True)
    versions.insert_copies()
    specs = _sum_repeated(specs, body)
    grad_block = body.program._new_block(body.idx)  # not made current: nothing is built in it
    grad_block.desc.forward_block_idx = body.idx
    _append(grad_block, specs, carried=[grad_name(t) for t in targets])
    made = set(block_writes(grad_block))
    inputs = [n for n in reads(op) if visible(n) and grad_name(n) in made
              and outer._find_var_recursive(n) is not None]
    _keep_for_backward(op, body, grad_block)
    return SubBlockGrad(grad_block, inputs, targets)


def _keep_for_backward(op, body, grad_block):
    """Tell the forward op which of its block's values a step must keep: those the gradient
    block reads (Paddle's ``skip_eager_deletion_vars``; what an earlier backward pass of the
    same op needs stays listed)."""
    needed = {n for o in grad_block.ops for n in reads(o) if n in body.vars}
    if op.opdef is not None and "skip_eager_deletion_vars" in op.opdef.attrs:
        kept = set(op.attr("skip_eager_deletion_vars")) if op.has_attr(
            "skip_eager_deletion_vars") else set()
        op.set_attr("skip_eager_deletion_vars", sorted(kept | needed))


class _StepHazards:
    """Refuses a step whose gradient would read an outer variable's value after the step
    overwrote it: the gradient block restores the values from before the step, so such a
    read would silently see the old one. Loop layers read state first and write it last
    (``assign`` at the end of the step), which never trips this."""

    def __init__(self, body):
        self.written = {}  # outer name -> index of the first op of the body that writes it
        for k, o in enumerate(body.ops):
            for n in writes(o):
                # Every outer variable counts, a loop counter too: a tensor-array gradient
                # read at the counter after it was incremented would touch the wrong step.
                if n not in body.vars:
                    self.written.setdefault(n, k)

    def __call__(self, op, made):
        k = op.idx
        if op.sub_blocks():
            return  # its grad op restores the values of its own steps
        for spec in made:
            for names in spec.inputs.values():
                for n in names:
                    first = self.written.get(n)
                    if first is None or first > k or _is_array(op.block, n):
                        continue  # an array's elements are never overwritten in place
                    raise BackwardError(
                        f"op '{op.type}' (block {op.block.idx}, op #{op.idx}) reads "
                        f"'{n}' after this step overwrote it, and its gradient needs that "
                        f"value: read it into a new variable first, and write '{n}' only at "
                        f"the end of the step (layers.assign(new, output={n}))"
                        + (f"; created at {op.source}" if op.source else ""))


@pausing_gc
def append_backward(loss, parameter_list=None, no_grad_set=None):
    """Append the backward pass of ``loss`` (shape [1]) to its program.

    Returns ``[(parameter, gradient variable)]`` for the trainable parameters that reach the
    loss (or those of ``parameter_list``). ``no_grad_set``: variables (or names) whose gradients
    are not computed; variables with ``stop_gradient`` are excluded too.
    """
    if not isinstance(loss, Variable):
        raise BackwardError(f"append_backward takes the loss Variable, got {type(loss).__name__}")
    shape = [int(d) for d in loss.shape]
    if any(d != 1 for d in shape):
        # One element of any rank: [], [1] or, as Paddle fills loss@GRAD, [1, 1].
        raise BackwardError(
            f"the loss '{loss.name}' must have shape [1] or [] (one element: e.g. the mean of "
            f"the per-example losses), found {shape}")
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
                  {"shape": shape, "value": 1.0,
                   "dtype": dtype_enum(loss.dtype), "op_role": OP_ROLE_BACKWARD | OP_ROLE_LOSS})
    wanted = _build(block, [loss], [seed], sources, no_grad)
    return [(p, block.var(grad_name(p.name))) for p in params if p.name in wanted]


@pausing_gc
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

