"""Graph facts of a block: what its ops read and write, which ops targets need, and what must
be fed. The one place these rules live; the executor (``run`` with and without pruning, the
feed check), ``Executor.eval`` and ``io.inference_program`` all ask here.

The rules:

- **Sub-blocks count.** An op that owns blocks (``while``, ``conditional_block``) reads and
  writes what the ops of those blocks read and write from outside themselves, nested blocks
  included, transitively. A control-flow op may write an outer variable only from its
  sub-block (its ``Out`` slot need not list it): :func:`writes` sees such writes all the same.
  Names declared in a sub-block are local to it and invisible outside.
- **In-place updates.** An op that reads and writes the same name (``increment`` X = Out, an
  optimizer's ParamOut = Param) needs the value before it: pruning keeps the earlier writers.
- **A write never hides an earlier one.** Pruning keeps every op that writes a needed name,
  not only the last: a ``while`` may run zero steps, a ``conditional_block`` may not run, a
  tensor-array write updates one element, so what an op "overwrites" is not known statically.
  Keeping more ops than strictly needed is safe; keeping fewer computes wrong values.
- **Ops with no kernel never run.** Ops whose definition says ``no_kernel`` (``feed``,
  ``fetch``: the executor binds feeds and fetches to slots itself) are never needed and never
  satisfy a read. Ops of unknown types are judged like any other op (the plan reports them).
- **Fed names cut the graph at their producers.** A fed value is the variable's value when
  the program starts. An op that writes a fed name without reading it produces it from other
  values: feeding replaces that computation (Fluid's prune; feeding an intermediate value),
  so the op is not needed for it, nor is anything before it for that name. An op that reads
  and writes a fed name updates it in place (a loop counter, a running mean, an optimizer's
  Param): it is needed like any other writer, so the targets get the updated value, as
  ``run`` computes it.
- **Satisfied reads.** A read is satisfied when the name is available (fed), is persistable
  (its value comes from the scope; the executor checks the scope separately), is a tensor
  array (one nothing wrote is empty, as ``create_array`` makes it), is ``@EMPTY@``
  (a gradient nobody needs: no variable), is undeclared (the plan reports that, with a better
  message), or an earlier op wrote it, through its sub-blocks included. Inside a sub-block,
  ops earlier in that block count too (so a loop body may compute a temporary and read it).

Functions take the framework's objects (Block, Operator) and return plain values; nothing
here imports the runtime, so every layer above the IR can use it.
"""
from ..ops.grad import EMPTY

__all__ = ["block_writes", "exposed_reads", "first_unsatisfied_read", "owner_exposed_reads",
           "prune", "reachable_blocks", "reads", "runs", "writes"]


def runs(op):
    """Whether ``op`` executes: False for ops whose definition says ``no_kernel``."""
    return not (op.opdef is not None and op.opdef.no_kernel)


def _between(sub, home):
    """Names declared in the ancestors of ``sub`` that ``home`` (the block of the op owning
    ``sub``) cannot see: none for a plain sub-block; for a gradient block (whose parent is its
    forward block), the forward block's variables, nested ones' too."""
    seen = set()
    b = home
    while b is not None:
        seen.add(b.idx)
        b = b.parent
    names = set()
    b = sub.parent
    while b is not None and b.idx not in seen:
        names.update(b.vars)
        b = b.parent
    return names


def _outer(sub, names_of, home):
    """Names the running ops of block ``sub`` touch (by ``names_of``), minus those declared
    in ``sub`` or in its ancestors below ``home`` (the block of the op that owns ``sub``): a
    gradient block's parent is its forward block, whose variables are the step's own."""
    local = set(sub.vars) | _between(sub, home)
    out = []
    for o in sub.ops:
        if runs(o):
            out.extend(n for n in names_of(o) if n not in local)
    return out


def _unique(names):
    if type(names) is list and len(names) == 1:   # the usual op: one name, a fresh list
        return names if names[0] != EMPTY else []
    return [n for n in dict.fromkeys(names) if n != EMPTY]


def reads(op):
    """Names ``op`` reads: its inputs, plus every outer name its sub-blocks' ops read
    (nested blocks included), in order, without duplicates or ``@EMPTY@``."""
    subs = op.sub_blocks()
    if not subs:
        return _unique(op.input_arg_names)
    names = list(op.input_arg_names)
    for sub in subs:
        names.extend(_outer(sub, reads, op.block))
    return _unique(names)


def writes(op):
    """Names ``op`` writes: its outputs, plus every outer name its sub-blocks' ops write
    (nested blocks included), in order, without duplicates or ``@EMPTY@``."""
    subs = op.sub_blocks()
    if not subs:
        return _unique(op.output_arg_names)
    names = list(op.output_arg_names)
    for sub in subs:
        names.extend(_outer(sub, writes, op.block))
    return _unique(names)


def block_writes(block):
    """Names the running ops of ``block`` write, ``block``'s own variables included, through
    nested blocks too (a loop body that never writes its condition could never end)."""
    return _unique(n for op in block.ops if runs(op) for n in writes(op))


def reachable_blocks(block):
    """Indices of ``block`` and of every block its ops own, transitively (every op: this is
    a fact of the IR, used to keep a pruned program's blocks and variables)."""
    seen, todo = {block.idx}, list(block.ops)
    while todo:
        for sub in todo.pop().sub_blocks():
            if sub.idx not in seen:
                seen.add(sub.idx)
                todo.extend(sub.ops)
    return seen


def prune(block, targets, feeds=()):
    """The ops of ``block`` needed to compute the names ``targets`` given the names ``feeds``,
    in block order: every running op that writes a needed name (through its sub-blocks
    included) other than by producing a fed one, and, transitively, the writers of what those
    ops read (see the module's rules)."""
    feeds = set(feeds)
    needed, kept = set(targets), []
    for op in reversed(block.ops):
        if not runs(op):
            continue
        op_reads = reads(op)
        produced = [n for n in writes(op) if n in needed]
        cut = [n for n in produced if n in feeds and n not in op_reads]
        if len(cut) < len(produced):
            kept.append(op)
            needed.update(op_reads)
        needed.difference_update(cut)  # before this op, the fed value stands in for these
    kept.reverse()
    return kept


def exposed_reads(ops, available=()):
    """``(op, name)`` for each name the running ``ops`` read (in order) before any of them
    writes it, each name once. ``op`` is the op that reads it, inside a sub-block where the
    read is there: the op to name in an error. Names in ``available`` count as written.

    A plan applies the same rule to the ops it prepares as it walks them (runtime/_prepare.pyx
    ``compile_ops``: its loop over a plain op's slots is this one's twin, an op that owns
    blocks goes through :func:`owner_exposed_reads`; tests/test_plan_prepare.py holds the two
    equal)."""
    written, seen = set(available), set()
    for op in ops:
        if runs(op):
            if op.sub_blocks():
                yield from owner_exposed_reads(op, written, seen)
                continue
            # The usual op, inlined (a plan checks every op of a large program): its own
            # slots only; @EMPTY@ among the written names is harmless, it is never read.
            for name in op.input_arg_names:
                if name not in written and name not in seen and name != EMPTY:
                    seen.add(name)
                    yield op, name
            for _, names in op._io()[1]:   # output_arg_names without the list
                written.update(names)


def owner_exposed_reads(op, written, seen):
    """:func:`exposed_reads`' step for an op that owns blocks: the list of its exposed reads
    (``written``: the names written before it, ``seen``: the names reported before; both are
    updated, ``written`` with what the op writes, through its blocks too)."""
    out = list(_exposed(op, written, seen))
    written.update(writes(op))
    return out


def _exposed(op, written, seen):
    for name in op.input_arg_names:
        if name not in written and name not in seen and name != EMPTY:
            seen.add(name)
            yield op, name
    for sub in op.sub_blocks():
        # The sub-block's ops see what was written before the op and earlier in the sub-block;
        # what they write stays visible only inside it (the caller adds writes(op) after).
        inner = set(written) | _between(sub, op.block)
        for o in sub.ops:
            if runs(o):
                yield from _exposed(o, inner, seen)
                inner.update(writes(o))


def first_unsatisfied_read(ops, available=()):
    """The first ``(op, name)`` where a running op of ``ops`` reads a variable that is neither
    in ``available`` (the fed names), persistable, nor written by an earlier op; ``None`` when
    every read is satisfied (see the module's rules)."""
    for op, name in exposed_reads(ops, available):
        var = op.block.find_var(name)
        if var is not None and not var.persistable and var.kind != "lod_tensor_array":
            return op, name
    return None
