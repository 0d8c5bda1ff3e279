"""What a kernel maker may know about the op it is specialized for, as plain data.

The plan reads the IR once, when it is prepared, and hands each kernel maker a
:class:`KernelInfo`: the op's type and attributes, the place, and per slot the facts of the
variables bound to it (dtype, build-time shape, LoD level, persistable, and whether an output
is wanted at all). Kernels ask these questions through the methods below and never walk the
Block or the Operator: a kernel is the same whichever program it runs in.

A kernel may also be called without an info (``Kernel(attrs, None)`` in tests and tools); it
then computes every output and assumes nothing about aliasing.
"""
from typing import NamedTuple, Optional, Tuple

import numpy as np

from ..framework.analysis import block_writes
from ..framework.block import Block
from ..ops.grad import EMPTY

__all__ = ["KernelInfo", "SlotVar", "kernel_info", "plan_info", "slot_var_of"]


class SlotVar(NamedTuple):
    """One variable bound to a slot (``None`` stands for ``@EMPTY@``: a gradient nobody needs,
    which has no variable)."""
    name: str
    dtype: Optional[str] = None
    shape: Tuple[int, ...] = ()   # build-time shape, -1 where unknown
    lod_level: int = 0
    persistable: bool = False


class KernelInfo:
    """The facts of one op, computed when the plan is prepared.

    ``op_type`` and ``attrs`` (every attribute, defaults filled in); ``place`` and ``device``
    (the device module); ``seed`` for random ops (None: nondeterministic); ``inputs`` and
    ``outputs``: ``{slot: (SlotVar or None, ...)}`` for the bound slots, ``None`` for an
    ``@EMPTY@`` entry. ``in_dtypes``/``out_dtypes``/``out_shapes`` give ``{slot: [...]}`` of the
    same facts for the kernels that only need those. ``location``: where the op is (``op_type``,
    ``block_idx``, ``op_idx``, ``source``), for an error a kernel raises after its call returned
    (a CUDA kernel's bad index, read at the end of the run).
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


class _Lazy:
    """A KernelInfo attribute computed on first read and then stored on the instance (a
    non-data descriptor: the stored value shadows it; functools.cached_property takes a lock
    per first read in this Python)."""

    def __init__(self, fn):
        self.fn, self.name = fn, fn.__name__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


class _PlanInfo(KernelInfo):
    """The KernelInfo a plan makes: what it costs a plan of a large program to make thousands
    of, each fact made when a kernel first asks (most ask none or one): ``inputs`` and
    ``outputs``, the op's ``location`` and its sub-blocks. The plan resolved every name of the
    op to a slot before, so ``slot_var`` only reads facts the plan already holds, and the
    plan belongs to one revision of the program: asking later gives what asking now would.
    ``where``: ``(op, block index, op index)``; ``subplan(block)``: the plan's own."""

    def __init__(self, op_type, attrs, place, device, io, slot_var, seed, subplan, where):
        self.op_type, self.attrs, self.place, self.device = op_type, attrs, place, device
        self._where = where
        self._io, self._slot_var, self._plan_subplan = io, slot_var, subplan
        if type(seed) is tuple:
            self._seed_words = seed   # derived when read: see seed
        else:
            self.seed = seed

    @_Lazy
    def seed(self):
        # One derived from the program's random_seed and the op's place ((random_seed, block
        # index, op index), as the plan found them): a SeedSequence costs ~13 us, and every op
        # of a seeded program would pay it though only random kernels read it (a 1603-op
        # program's preparation took 36 ms instead of 17).
        return derived_seed(self._seed_words)

    @_Lazy
    def location(self):
        op, block_idx, op_idx = self._where
        return dict(op_type=self.op_type, block_idx=block_idx, op_idx=op_idx,
                    source=source_line(op, self.attrs))

    @_Lazy
    def _blocks(self):
        return {a: v for a, v in self.attrs.items() if isinstance(v, Block)}

    @_Lazy
    def _sub_writes(self):
        return {a: frozenset(block_writes(b)) for a, b in self._blocks.items()}

    def subplan(self, attr):
        blocks = self._blocks
        if self._plan_subplan is None:
            return KernelInfo.subplan(self, attr)   # its error
        if attr not in blocks:
            raise ValueError(f"{self.op_type}: attribute '{attr}' does not hold a block "
                             f"(block attributes: {sorted(blocks) or 'none'})")
        return self._plan_subplan(blocks[attr])

    @_Lazy
    def inputs(self):
        sv = self._slot_var
        return {s: tuple(sv(n) for n in ns) for s, ns in self._io[0].items()}

    @_Lazy
    def outputs(self):
        sv = self._slot_var
        return {s: tuple(sv(n) for n in ns) for s, ns in self._io[1].items()}

    # The questions most kernel makers ask, answered from the slot's names and the facts of
    # those alone (``inputs``/``outputs`` would read every slot's: a grad or optimizer op's
    # maker asking two questions cost ~9 us): the same answers as KernelInfo's.
    def n_inputs(self, slot):
        return len(self._io[0].get(slot, ()))

    def n_outputs(self, slot):
        return len(self._io[1].get(slot, ()))

    def wanted(self, slot):
        return [n != EMPTY for n in self._io[1].get(slot, ())]

    def wants(self, slot):
        for n in self._io[1].get(slot, ()):
            if n != EMPTY:
                return True
        return False

    def persistable(self, slot):
        sv = self._slot_var
        for names in (self._io[0].get(slot, ()), self._io[1].get(slot, ())):
            for n in names:
                if n != EMPTY and sv(n).persistable:
                    return True
        return False

    def in_place(self, in_slot, out_slot):
        ins = self._io[0].get(in_slot, ())
        outs = self._io[1].get(out_slot, ())
        return (len(ins) == 1 and len(outs) == 1 and ins[0] != EMPTY and ins[0] == outs[0]
                and self._slot_var(ins[0]).persistable)


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
            return None if name == "@EMPTY@" else slot_var_of(block.var_recursive(name))
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


def plan_info(op_type, attrs, place, device, seed, subplan, location, io, slot_var):
    """``kernel_info`` as a plan calls it, every fact given (``device``: ``place.module()``,
    which the plan reads once; ``io``: the op's ``(inputs, outputs)``; ``subplan(block)``: the
    plan's sub-plan maker): the info reads the op's slots when a kernel first asks."""
    info = _PlanInfo(op_type, attrs, place, device, io, slot_var, seed, subplan, None)
    info.location = location
    return info


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
