"""Dropping a run's dead intermediate values right after their last use (Paddle's eager
deletion of variables after their last reader).

A run keeps its non-persistable values in a list by slot (the executor's values) that lives
until the run ends: without this, every activation of an inference pass, and every temporary
of a training step, stays allocated to the end of the run, so the run's peak is the sum of
them all and each new array is fresh (cold) memory. With it, the plan's instruction that
last touches a dead value lets go of it (``Instr.drop``, ``_loop``), its array goes back to
the allocator (``host_memory``'s pool, or malloc) and the next array of that size reuses the
block while it is still in cache.

What is dropped: a dense (``lod_tensor``) non-persistable variable of the root block that is
neither fed nor fetched, after the last root instruction that reads or writes it. An op that
owns sub-blocks (``while``, ``conditional_block`` and their gradients) touches every name any
op of its sub-blocks (nested ones too) names: its kernel runs those blocks' plans over the
same values, and their gradients restore and read the forward values by slot. Never
dropped: persistable variables (the scope's), fed and fetched ones, tensor arrays and step
scopes (their elements are shared with other slots and kept steps), sub-plans' own values (a
loop body runs again). A run's values start empty (Fluid's local scope), so nothing carries
from one run to the next, and a user never sees the dropped values: non-persistable
variables are not written back to the scope after a run, dropped or not.

``HEADRACE_EAGER_DELETE=0`` (or Paddle's ``FLAGS_eager_delete_tensor_gb`` below 0) keeps every
value to the end of the run, as before (for a debugger or a profiler's hook that looks at the
values list mid-run); runs that check NaN/Inf keep them too (their per-op check reads the
outputs after the op, dead ones included).
"""
import os

from . import _loop

__all__ = ["apply", "enabled"]


def enabled():
    """Whether plans prepared now drop dead values (read from the environment each time)."""
    if os.environ.get("HEADRACE_EAGER_DELETE", "1") == "0":
        return False
    gb = os.environ.get("FLAGS_eager_delete_tensor_gb")
    try:
        return gb is None or float(gb) >= 0
    except ValueError:
        return True


def apply(plan, keep=()):
    """Set ``drop`` on the root ``plan``'s instructions: per instruction, the slots whose
    values are dead once it returns. ``keep``: slots never dropped (the run's fed and fetched
    ones). Returns the number of slots dropped."""
    instrs, slots = plan.instrs, plan.slots
    last = _loop.last_uses(instrs, len(slots.facts))   # slot -> last instruction, or -1
    nested = [(k, ins.op.sub_blocks()) for k, ins in enumerate(instrs) if ins.frame]
    nested = [(k, subs) for k, subs in nested if subs]   # (frame kernels run the sub-plans)
    if nested:
        by_name = {}
        for i, k in enumerate(last):
            if k >= 0:
                by_name.setdefault(slots.vars[i].name, []).append(i)
        for k, subs in nested:
            for name in _names_in(subs):
                for i in by_name.get(name, ()):
                    if last[i] < k:
                        last[i] = k
    return _loop.set_drops(instrs, last, slots.facts, set(keep))


def _names_in(blocks):
    """Every variable name an op of ``blocks`` or of their nested blocks names (inputs and
    outputs, local or not: a superset is safe, a value kept a little longer)."""
    names, seen, todo = set(), set(), list(blocks)
    while todo:
        block = todo.pop()
        if block.idx in seen:
            continue
        seen.add(block.idx)
        for op in block.ops:
            names.update(op.input_arg_names)
            names.update(op.output_arg_names)
            todo.extend(op.sub_blocks())
    return names
