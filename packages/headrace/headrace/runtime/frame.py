"""The frame API: how frame kernels (and LoD kernels) read and write their op's variables.

A frame kernel is registered with ``kind="frame"`` and called once per run as
``kernel(frame)``. The :class:`Frame` reads the op's inputs and writes its outputs by slot
name, with their LoD, and runs sub-plans over the same variables. The plan builds the slot
layout (:class:`FrameLayout`) once; a run only wraps it around that run's values.
"""
from ._loop import Frame
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

    def no_slot(self, slot, role):
        table = self.ins if role == "input" else self.outs
        return KeyError(f"{self.op_type}: the definition has no {role} slot '{slot}' "
                        f"({role} slots: {', '.join(table) or 'none'})")


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
            for i, r in zip(frame.output_ids(slot), res if dup else (res,)):
                if r is None:
                    continue
                if isinstance(r, Tensor):
                    frame.store(i, r.data, r.lod)
                else:
                    frame.store(i, r, None)
