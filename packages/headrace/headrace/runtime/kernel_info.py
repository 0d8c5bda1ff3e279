"""What a kernel maker may know about the op it is specialized for, as plain data.

The plan reads the IR once, when it is prepared, and hands each kernel maker a
:class:`KernelInfo`: the op's type and attributes, the place, and per slot the facts of the
variables bound to it (dtype, build-time shape, LoD level, persistable, and whether an output
is wanted at all). Kernels ask these questions through the methods below and never walk the
Block or the Operator: a kernel is the same whichever program it runs in.

A kernel may also be called without an info (``Kernel(attrs, None)`` in tests and tools); it
then computes every output and assumes nothing about aliasing.
"""
from abc import ABCMeta
from typing import NamedTuple, Optional, Tuple

import numpy as np

from ..framework.analysis import block_writes
from ..framework.block import Block
from ..ops.grad import EMPTY

__all__ = ["KernelInfo", "SlotVar", "kernel_info", "slot_var_of"]


class SlotVar(NamedTuple):
    """One variable bound to a slot (``None`` stands for ``@EMPTY@``: a gradient nobody needs,
    which has no variable)."""
    name: str
    dtype: Optional[str] = None
    shape: Tuple[int, ...] = ()   # build-time shape, -1 where unknown
    lod_level: int = 0
    persistable: bool = False


class KernelInfo(metaclass=ABCMeta):   # noqa: B024 (not abstract: ABCMeta for register)
    """The facts of one op, computed when the plan is prepared.

    ``op_type`` and ``attrs`` (every attribute, defaults filled in); ``place`` and ``device``
    (the device module); ``seed`` for random ops (None: nondeterministic); ``inputs`` and
    ``outputs``: ``{slot: (SlotVar or None, ...)}`` for the bound slots, ``None`` for an
    ``@EMPTY@`` entry. ``in_dtypes``/``out_dtypes``/``out_shapes`` give ``{slot: [...]}`` of the
    same facts for the kernels that only need those. ``location``: where the op is (``op_type``,
    ``block_idx``, ``op_idx``, ``source``), for an error a kernel raises after its call returned
    (a CUDA kernel's bad index, read at the end of the run).

    A plan makes its own, compiled, which answers as this class does (``_plan_info``:
    registered, so ``isinstance(info, KernelInfo)`` holds).
    """

    def __init__(self, op_type, attrs, place=None, inputs=None, outputs=None, seed=None,
                 sub_writes=None, subplan=None, location=None):
        self.op_type = op_type
        self.location = dict(location or {"op_type": op_type})
        self.attrs = attrs
        self.place = place
        self.device = place.module() if place is not None else None
        self.inputs = dict(inputs or {})
        self.outputs = dict(outputs or {})
        self.seed = seed
        self._sub_writes = dict(sub_writes or {})  # block attribute -> names written in it
        self._subplan = subplan                    # block attribute -> Plan (from the plan)

    # The per-slot summaries are made when a kernel first asks (most never do: a plan of a
    # large program makes thousands of infos).
    @property
    def in_dtypes(self):
        return self._summary("in_dtypes", self.inputs, "dtype")

    @property
    def out_dtypes(self):
        return self._summary("out_dtypes", self.outputs, "dtype")

    @property
    def out_shapes(self):
        return self._summary("out_shapes", self.outputs, "shape")

    def _summary(self, key, slots, field):
        got = self.__dict__.get("_" + key)
        if got is None:
            got = self.__dict__["_" + key] = {
                s: [v and getattr(v, field) for v in vs] for s, vs in slots.items()}
        return got

    def __repr__(self):
        return f"<KernelInfo {self.op_type}>"

    @property
    def stream(self):
        """The stream to launch on (the running executor's; None on devices without streams).
        Read it at call time: the same kernel serves every run."""
        current = getattr(self.device, "current_stream", None)
        return current() if current is not None else None

    # -- how many -------------------------------------------------------------------------
    def n_inputs(self, slot):
        """The number of variables bound to input ``slot`` (0: unbound)."""
        return len(self.inputs.get(slot, ()))

    def n_outputs(self, slot):
        """The number of variables bound to output ``slot``, ``@EMPTY@`` entries included."""
        return len(self.outputs.get(slot, ()))

    # -- which outputs to compute ---------------------------------------------------------
    def wanted(self, slot):
        """Per variable of output ``slot``: must the kernel compute it? False for ``@EMPTY@``
        (a gradient nobody needs). An unbound slot gives ``[]``."""
        return [v is not None for v in self.outputs.get(slot, ())]

    def wants(self, slot):
        """Whether at least one variable of output ``slot`` is wanted: a grad kernel skips the
        gradient of an unbound or ``@EMPTY@`` slot (it returns None there)."""
        return any(v is not None for v in self.outputs.get(slot, ()))

    # -- persistable and aliasing ---------------------------------------------------------
    def persistable(self, slot):
        """Whether a variable bound to ``slot`` (an input or an output of that name) is
        persistable: its value lives in the scope from run to run."""
        return any(v is not None and v.persistable
                   for vs in (self.inputs.get(slot, ()), self.outputs.get(slot, ()))
                   for v in vs)

    def in_place(self, in_slot, out_slot):
        """Whether output ``out_slot`` may be written into the existing array of input
        ``in_slot``: both are bound to the same single variable, and it is persistable.

        Persistable values belong to the scope, which keeps the same array from run to run, so
        updating it in place is what the program asks for (optimizer updates); a
        non-persistable value may be a caller's fed array or shared with another variable, and
        is dropped after the run anyway, so it is not worth the risk."""
        ins = self.inputs.get(in_slot, ())
        outs = self.outputs.get(out_slot, ())
        return (len(ins) == 1 and len(outs) == 1 and ins[0] is not None
                and outs[0] is not None and ins[0].name == outs[0].name
                and ins[0].persistable)

    def may_alias(self, in_slot, out_slot):
        """Whether output ``out_slot`` may share memory with input ``in_slot`` (be the input's
        array itself or a view of it): neither side is persistable. A persistable array may be
        updated in place later (optimizers write Param and their state into the existing
        arrays), which would show through a view; so would an in-place update of a view
        output bound to a persistable variable."""
        return not (self.persistable(in_slot) or self.persistable(out_slot))

    # -- sub-blocks -----------------------------------------------------------------------
    def subplan(self, attr):
        """The Plan of the sub-block held by block attribute ``attr`` (``"sub_block"``), over
        the same slots as this op's plan; a frame kernel runs it with ``frame.run(plan)``."""
        if self._subplan is None:
            raise ValueError(f"{self.op_type}: no plan is being prepared, so there is no "
                             f"plan for sub-block attribute '{attr}'")
        return self._subplan(attr)

    def sub_block_writes(self, attr, in_slot):
        """Whether an op of the sub-block held by ``attr`` (or of a block nested in it) writes
        every variable bound to input ``in_slot``: a loop whose body never writes its
        condition could never end."""
        written = self._sub_writes.get(attr, frozenset())
        return all(v is not None and v.name in written for v in self.inputs.get(in_slot, ()))


def slot_var_of(var):
    """The :class:`SlotVar` of Variable ``var``."""
    m = var.meta()
    return SlotVar(m.name, m.dtype, m.shape, m.lod_level, bool(var.persistable))


def kernel_info(op, attrs=None, place=None, seed=None, subplan=None, location=None, io=None,
                slot_var=None):
    """A :class:`KernelInfo` for Operator ``op`` (read from the IR here, once).

    ``subplan(block)`` makes the Plan of a sub-block; the plan passes its own. Tests build
    infos for ops of a hand-made block with ``kernel_info(op)``. A plan passes what it read
    already: ``location`` (it knows the op's index), ``io`` (``op.inputs, op.outputs``) and
    ``slot_var(name)`` (its variables' facts, read once per plan, not once per op)."""
    attrs = op.attrs if attrs is None else attrs
    block = op.block
    if slot_var is None:
        def slot_var(name):
            return None if name == EMPTY else slot_var_of(block.var_recursive(name))
    ins, outs = io if io is not None else (op.inputs, op.outputs)
    inputs = {s: tuple(slot_var(n) for n in ns) for s, ns in ins.items()}
    outputs = {s: tuple(slot_var(n) for n in ns) for s, ns in outs.items()}
    sub_writes, make = _sub_blocks(op.type, attrs, subplan)
    if location is None:
        location = dict(op_type=op.type, block_idx=block.idx, op_idx=op.idx, source=op.source)
    return KernelInfo(op.type, attrs, place, inputs, outputs, seed, sub_writes, make, location)


def _sub_blocks(op_type, attrs, subplan):
    """The op's block attributes as a kernel sees them: ({attr: the variables its block
    writes}, ``make(attr)``, the sub-plan of one, or None without ``subplan``)."""
    blocks = None
    for a, v in attrs.items():
        if isinstance(v, Block):
            if blocks is None:
                blocks = {}
            blocks[a] = v
    if blocks is None:   # the usual op: no sub-block, nothing to build
        blocks, sub_writes = {}, {}
    else:
        sub_writes = {a: frozenset(block_writes(b)) for a, b in blocks.items()}
    make = None
    if subplan is not None:
        def make(attr):
            if attr not in blocks:
                raise ValueError(f"{op_type}: attribute '{attr}' does not hold a block "
                                 f"(block attributes: {sorted(blocks) or 'none'})")
            return subplan(blocks[attr])
    return sub_writes, make


def derived_seed(words):
    """The seed of a random op without one of its own in a program with a ``random_seed``:
    distinct, reproducible streams per op from ``(random_seed, block index, op index)``, in
    this process only (ops whose definition names a ``seed_attr`` had the program's seed
    written into them when built, which crosses the wire: framework/seeds.py)."""
    return int(np.random.SeedSequence(list(words)).generate_state(1)[0])


def source_line(op, attrs):
    """``op.source`` from its decoded attributes (op.source searches the desc again): the
    first line of a STRINGS ``op_callstack``, None when it is empty or absent."""
    cs = attrs.get("op_callstack")
    if cs is None:
        return None
    if type(cs) is list and (not cs or type(cs[0]) is str):
        return cs[0] if cs else None
    return op.source   # another type: whatever the desc holds, as op.source reads it
