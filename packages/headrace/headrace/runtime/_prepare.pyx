# cython: language_level=3, boundscheck=False, wraparound=False
"""Plan preparation's per-op slot walk (``Plan._compile``), compiled: the first step of a large
program resolves the slots of every op's inputs and outputs once (1603 ops, ~6,000 names
for a 200-layer fc net with its SGD step), and in Python that walk was a third of the
plan's own per-op cost. What it cannot answer from the plan's name -> slot dict (a name seen
for the first time, ``@EMPTY@``, an undeclared name and its error) goes to the plan's
methods, exactly as before.
"""

from ..ops.grad import EMPTY

cdef object NONE_SLOT = 0   # plan.NONE_SLOT: unbound optional inputs read slot 0 (None)


cdef object _first_sight(plan, op, name, str role, dict by_name, list facts):
    """The slot of ``name`` (not ``@EMPTY@``) seen for the first time in ``plan``:
    ``Plan._slot_of``'s usual case, inlined (an undeclared name takes its path and error)."""
    var = op.block._find_var_recursive(name)
    if var is None:
        return plan._slot_of(op, name, role)
    i = by_name[name] = plan.slots.slot(var)
    if (<tuple>facts[i])[1].lod_level > 0:   # once per name: facts do not change
        plan.lod_slots.add(i)
    return i


cdef inline object _in_slot(plan, op, s, name, dict by_name, list facts):
    i = by_name.get(name)   # (a name seen before is > 0 here; @EMPTY@ is never here)
    if i is not None:
        return i
    if name == EMPTY:
        return plan._input_slot(op, s, name)   # None, or its error
    return _first_sight(plan, op, name, "input", by_name, facts)


cdef inline object _out_slot(plan, op, name, dict by_name, list facts):
    i = by_name.get(name)
    if i is not None:
        return i
    if name == EMPTY:
        return -1   # a gradient nobody needs: computed, never stored
    return _first_sight(plan, op, name, "output", by_name, facts)


def resolve(plan, op, tuple shape, dict ins, dict outs, float_dtypes):
    """``(in_ids, out_ids, dtype)`` of ``op`` for ``plan``: per input slot of ``shape`` (the
    OpDef's ``((Slot, name, duplicable), ...)``) its slot index or tuple of them (``()``/0
    when unbound), per output slot likewise (``()``/-1), and the kernel's dtype: the first
    floating input's, else the first input's."""
    cdef dict by_name = plan._by_name
    cdef list facts = plan.slots.facts
    cdef list in_ids = [], out_ids = []
    cdef object dtype = None, d, s, name, dup, names, n, i, first
    cdef tuple ids
    for s, name, dup in <tuple>shape[0]:
        names = ins.get(name)
        if not names:
            in_ids.append(() if dup else NONE_SLOT)
            continue
        if dup:
            ids = tuple([_in_slot(plan, op, s, n, by_name, facts) for n in names])
            in_ids.append(ids)
            first = NONE_SLOT
            for first in ids:
                if first != NONE_SLOT:
                    break
        else:
            n = names[0]
            first = _in_slot(plan, op, s, n, by_name, facts)
            in_ids.append(first)
            if first == NONE_SLOT and len(names) > 1:   # a file's [@EMPTY@, x, ...]
                for n in names:
                    if n != EMPTY:
                        plan._slot_var(n)
                        first = by_name[n]
                        break
        if first != NONE_SLOT and (dtype is None or dtype not in float_dtypes):
            d = (<tuple>facts[first])[1].dtype
            if dtype is None or d in float_dtypes:
                dtype = d
    for name, dup in <tuple>shape[1]:
        names = outs.get(name)
        if not names:
            out_ids.append(() if dup else -1)
        elif dup:
            out_ids.append(tuple([_out_slot(plan, op, n, by_name, facts) for n in names]))
        else:
            n = names[0]
            out_ids.append(_out_slot(plan, op, n, by_name, facts))
    return tuple(in_ids), tuple(out_ids), dtype
