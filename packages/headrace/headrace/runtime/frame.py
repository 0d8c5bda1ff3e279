"""The frame API: how frame kernels (and LoD kernels) read and write their op's variables.

A frame kernel is registered with ``kind="frame"`` and called once per run as
``kernel(frame)``. The :class:`Frame` reads the op's inputs and writes its outputs by slot
name, with their LoD, and runs sub-plans over the same variables. The plan builds the slot
layout (:class:`FrameLayout`) once; a run only wraps it around that run's values.
"""
from .tensor import Tensor

__all__ = ["Frame", "FrameLayout", "LoDKernel"]


class FrameLayout:
    """Slot name -> the slot indices of its variables, for one op: every slot of the op's
    definition, ``()`` when unbound (an ``@EMPTY@`` output is ``-1``: never stored)."""
    __slots__ = ("op_type", "ins", "outs")

    def __init__(self, op_type, ins, outs):
        self.op_type = op_type
        self.ins = ins    # {slot: (index, ...)}
        self.outs = outs

    def _ids(self, table, slot, role):
        try:
            return table[slot]
        except KeyError:
            raise KeyError(f"{self.op_type}: the definition has no {role} slot '{slot}' "
                           f"({role} slots: {', '.join(table) or 'none'})") from None


class Frame:
    """One op's view of a run's variables, by slot name.

    Reading: ``input(slot)`` (the value of a slot's single variable, None when unbound),
    ``inputs(slot)`` (a list, for duplicable slots), ``lod(slot)``, ``tensor(slot)`` /
    ``tensors(slot)`` (value and LoD together), ``output(slot)`` (an output variable's
    current value, say an array being appended to). Writing: ``set_output(slot, value,
    lod=None)`` and ``set_outputs(slot, values, lods=None)``. Sub-blocks: ``run(plan)`` runs a
    plan from ``info.subplan(attr)`` over the same variables, ``snapshot(plan)`` keeps the
    values of its local variables (one step scope).
    """
    __slots__ = ("_layout", "_values", "_lods")

    def __init__(self, layout, values, lods):
        self._layout = layout
        self._values = values
        self._lods = lods

    @property
    def op_type(self):
        return self._layout.op_type

    # -- reading --------------------------------------------------------------------------
    def _in(self, slot):
        return self._layout._ids(self._layout.ins, slot, "input")

    def _out(self, slot):
        return self._layout._ids(self._layout.outs, slot, "output")

    def input(self, slot):
        ids = self._in(slot)
        return self._values[ids[0]] if ids else None

    def inputs(self, slot):
        return [self._values[i] for i in self._in(slot)]

    def lod(self, slot):
        ids = self._in(slot)
        return self._lods.get(ids[0]) if ids else None

    def tensor(self, slot):
        """Input ``slot``'s value and LoD as a Tensor (None when unbound)."""
        ids = self._in(slot)
        return Tensor(self._values[ids[0]], self._lods.get(ids[0])) if ids else None

    def tensors(self, slot):
        return [Tensor(self._values[i], self._lods.get(i)) for i in self._in(slot)]

    def output(self, slot):
        """The current value of output ``slot``'s variable (None before its first write)."""
        ids = self._out(slot)
        return self._values[ids[0]] if ids and ids[0] > 0 else None

    # -- writing --------------------------------------------------------------------------
    def set_output(self, slot, value, lod=None):
        """Store ``value`` (with ``lod``; None clears it) in output ``slot``'s variable.
        Writing an unbound or ``@EMPTY@`` output is a no-op."""
        ids = self._out(slot)
        if ids:
            self._store(ids[0], value, lod)

    def set_outputs(self, slot, values, lods=None):
        """Store one value per variable of a duplicable output slot."""
        ids = self._out(slot)
        if len(values) != len(ids):
            raise ValueError(f"{self.op_type}: {len(values)} values for output '{slot}', "
                             f"which is bound to {len(ids)} variables")
        for n, (i, v) in enumerate(zip(ids, values)):
            self._store(i, v, lods[n] if lods is not None else None)

    def _store(self, i, value, lod):
        if i <= 0:
            return
        self._values[i] = value
        if lod:
            self._lods[i] = lod
        else:
            self._lods.pop(i, None)

    # -- sub-blocks -----------------------------------------------------------------------
    def run(self, plan):
        """Run ``plan`` (from ``info.subplan(attr)``) over this run's variables."""
        plan.run(self._values, self._lods)

    def snapshot(self, plan):
        """The values (and LoD) of ``plan``'s local variables now: one kept step scope."""
        return {i: (self._values[i], self._lods.get(i)) for i in plan.local_ids}


class LoDKernel:
    """Runs a kernel registered with ``kind="lod"``: it takes a Tensor per input (a list for a
    duplicable slot, None for an unbound one) and returns one entry per output slot (a Tensor,
    a plain array for an output without LoD, a list for a duplicable slot, or None)."""
    __slots__ = ("fn", "in_slots", "out_slots")

    def __init__(self, fn, in_slots, out_slots):
        self.fn = fn
        self.in_slots = in_slots    # ((name, duplicable), ...) in the definition's order
        self.out_slots = out_slots

    def __call__(self, frame):
        args = [frame.tensors(s) if dup else frame.tensor(s) for s, dup in self.in_slots]
        results = self.fn(*args)
        if len(results) != len(self.out_slots):
            raise ValueError(f"the kernel returned {len(results)} outputs, the op definition "
                             f"has {len(self.out_slots)} output slots")
        for (slot, dup), res in zip(self.out_slots, results):
            for i, r in zip(frame._out(slot), res if dup else (res,)):
                if r is None:
                    continue
                if isinstance(r, Tensor):
                    frame._store(i, r.data, r.lod)
                else:
                    frame._store(i, r, None)
