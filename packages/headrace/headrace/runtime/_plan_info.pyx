# cython: language_level=3, boundscheck=False, wraparound=False
"""The KernelInfo a plan makes (:class:`_PlanInfo`), compiled.

A plan of a large program makes thousands of infos, one per op, and most kernel makers ask
one or two questions of theirs (a gradient's: which outputs are wanted, whether it may alias
Out@GRAD; an optimizer's: whether Param is updated in place). As a Python subclass of
KernelInfo each info cost ~1 us to make and each question ~0.5 us through Python frames,
~3 ms of the first step of the 1603-op fc program; here both are a few C calls.

The answers are KernelInfo's (tests/test_kernel_contract.py asks every question of every op
of a training program with a loop both ways). Each fact is made when a kernel first asks:
``inputs`` and ``outputs`` (the facts of every variable of the op), ``location`` (the op's
source line), ``seed`` (a derived one costs a SeedSequence) and the sub-blocks. The plan
resolved every name of the op to a slot before making the info, so ``slot_var`` only reads
facts the plan holds, and a plan belongs to one revision of its program: asking later gives
what asking now would. ``isinstance(info, KernelInfo)`` holds (KernelInfo.register).
"""
from ..framework.analysis import block_writes
from ..framework.block import Block
from ..ops.grad import EMPTY
from .kernel_info import KernelInfo, derived_seed, source_line

cdef str _EMPTY = EMPTY
cdef object _UNSET = object()   # a fact not made yet


cdef class SlotVarOf:
    """``Plan._slot_var`` for a plan's infos (KernelInfo's ``slot_var``): a name the plan has
    resolved already (every name of the op being prepared) is two lookups here; any other,
    ``@EMPTY@`` and undeclared names included, goes to the plan's method. Kernel makers ask
    about persistable and in-place variables (an SGD op's maker, a gradient's): through the
    Python method each name cost ~0.3 us, ~2,000 names for a 1603-op program."""
    cdef dict by_name
    cdef list facts
    cdef object slow

    def __init__(self, plan):
        self.by_name, self.facts, self.slow = plan._by_name, plan.slots.facts, plan._slot_var

    def __call__(self, name):
        return self.of(name)

    cdef object of(self, name):
        i = self.by_name.get(name)
        if i is None:
            return self.slow(name)
        return (<tuple>self.facts[<Py_ssize_t>i])[1]

    cdef bint persistable(self, name) except -1:
        """Whether the variable ``name`` (not ``@EMPTY@``) is persistable."""
        return (<tuple>self.of(name))[4]   # SlotVar: (name, dtype, shape, lod_level, persistable)


cdef class _PlanInfo:
    """KernelInfo of one op of a plan. ``io``: ``([(slot, (names...)), ...], [...])`` of its
    inputs and outputs, as the op keeps them (Operator._io; a repeated slot: its last
    binding); ``slot_var``: the plan's :class:`SlotVarOf` (the SlotVar of a
    name); ``seed``: the op's seed, None, or ``(random_seed, block index, op index)`` to
    derive one from when read; ``subplan(block)``: the plan's sub-plan maker; ``where``:
    ``(op, block index, op index)``."""
    cdef public object op_type, attrs, place, device
    cdef list _ins, _outs
    cdef SlotVarOf _slot_var
    cdef object _plan_subplan, _where, _seed_words
    cdef object _seed, _location, _inputs, _outputs, _blocks, _sub_writes
    cdef object _in_dtypes, _out_dtypes, _out_shapes
    cdef dict __dict__   # what a caller sets beyond the facts, as on any KernelInfo

    def __init__(self, op_type, attrs, place, device, tuple io, SlotVarOf slot_var, seed,
                 subplan, where):
        self.op_type, self.attrs, self.place, self.device = op_type, attrs, place, device
        self._ins, self._outs = io   # the op's own lists of pairs: read, never changed
        self._slot_var, self._plan_subplan, self._where = slot_var, subplan, where
        if type(seed) is tuple:
            self._seed_words, self._seed = seed, _UNSET
        else:
            self._seed = seed
        self._location = self._inputs = self._outputs = self._blocks = _UNSET
        self._sub_writes = self._in_dtypes = self._out_dtypes = self._out_shapes = _UNSET

    def __repr__(self):
        return f"<KernelInfo {self.op_type}>"

    # -- facts made when first read --------------------------------------------------------
    @property
    def seed(self):
        if self._seed is _UNSET:
            # One derived from the program's random_seed and the op's place: a SeedSequence
            # costs ~13 us, and every op of a seeded program would pay it though only random
            # kernels read it.
            self._seed = derived_seed(self._seed_words)
        return self._seed

    @seed.setter
    def seed(self, value):
        self._seed = value

    @property
    def location(self):
        if self._location is _UNSET:
            op, block_idx, op_idx = self._where
            self._location = dict(op_type=self.op_type, block_idx=block_idx, op_idx=op_idx,
                                  source=source_line(op, self.attrs))
        return self._location

    @location.setter
    def location(self, value):
        self._location = value

    @property
    def inputs(self):
        if self._inputs is _UNSET:
            self._inputs = self._facts(self._ins)
        return self._inputs

    @property
    def outputs(self):
        if self._outputs is _UNSET:
            self._outputs = self._facts(self._outs)
        return self._outputs

    cdef dict _facts(self, list pairs):
        cdef SlotVarOf sv = self._slot_var
        return {s: tuple([sv.of(n) for n in ns]) for s, ns in pairs}   # (the last binding)

    @property
    def in_dtypes(self):
        if self._in_dtypes is _UNSET:
            self._in_dtypes = _summary(self.inputs, 1)
        return self._in_dtypes

    @property
    def out_dtypes(self):
        if self._out_dtypes is _UNSET:
            self._out_dtypes = _summary(self.outputs, 1)
        return self._out_dtypes

    @property
    def out_shapes(self):
        if self._out_shapes is _UNSET:
            self._out_shapes = _summary(self.outputs, 2)
        return self._out_shapes

    @property
    def stream(self):
        """KernelInfo.stream: the running executor's stream, read at call time."""
        current = getattr(self.device, "current_stream", None)
        return current() if current is not None else None

    # -- the questions (KernelInfo's answers, from the slot's names and their facts) ---------
    def n_inputs(self, slot):
        return len(slot_names(self._ins, slot))

    def n_outputs(self, slot):
        return len(slot_names(self._outs, slot))

    def wanted(self, slot):
        return [n != _EMPTY for n in slot_names(self._outs, slot)]

    def wants(self, slot):
        for n in slot_names(self._outs, slot):
            if n != _EMPTY:
                return True
        return False

    cdef bint _persistable(self, slot) except -1:
        cdef SlotVarOf sv = self._slot_var
        for n in slot_names(self._ins, slot):
            if n != _EMPTY and sv.persistable(n):
                return True
        for n in slot_names(self._outs, slot):
            if n != _EMPTY and sv.persistable(n):
                return True
        return False

    def persistable(self, slot):
        return self._persistable(slot)

    def in_place(self, in_slot, out_slot):
        ins = slot_names(self._ins, in_slot)
        outs = slot_names(self._outs, out_slot)
        return (len(ins) == 1 and len(outs) == 1 and ins[0] != _EMPTY and ins[0] == outs[0]
                and self._slot_var.persistable(ins[0]))

    def may_alias(self, in_slot, out_slot):
        return not (self._persistable(in_slot) or self._persistable(out_slot))

    # -- sub-blocks --------------------------------------------------------------------------
    cdef dict _block_attrs(self):
        if self._blocks is _UNSET:
            self._blocks = {a: v for a, v in self.attrs.items() if isinstance(v, Block)}
        return self._blocks

    def subplan(self, attr):
        blocks = self._block_attrs()
        if self._plan_subplan is None:
            raise ValueError(f"{self.op_type}: no plan is being prepared, so there is no "
                             f"plan for sub-block attribute '{attr}'")
        if attr not in blocks:
            raise ValueError(f"{self.op_type}: attribute '{attr}' does not hold a block "
                             f"(block attributes: {sorted(blocks) or 'none'})")
        return self._plan_subplan(blocks[attr])

    def sub_block_writes(self, attr, in_slot):
        if self._sub_writes is _UNSET:
            self._sub_writes = {a: frozenset(block_writes(b))
                                for a, b in self._block_attrs().items()}
        written = self._sub_writes.get(attr, frozenset())
        return all(v is not None and v.name in written for v in self.inputs.get(in_slot, ()))


cdef tuple slot_names(list pairs, slot):
    """The names bound to ``slot`` in ``pairs`` (``[(slot, (names...)), ...]``, as an op keeps
    them), () when unbound; a repeated slot: its last binding, as ``dict(pairs)`` has it. A
    scan of the op's few pairs: the two dicts an op's preparation made of them, and freed
    with its info, cost ~0.3 us an op."""
    cdef Py_ssize_t k
    cdef tuple p
    for k in range(len(pairs) - 1, -1, -1):
        p = <tuple>pairs[k]
        if p[0] == slot:
            return <tuple>p[1]
    return ()


cdef dict _summary(dict slots, Py_ssize_t field):
    """KernelInfo._summary: ``{slot: [that field of each SlotVar, None for @EMPTY@]}``."""
    return {s: [v and v[field] for v in vs] for s, vs in slots.items()}


KernelInfo.register(_PlanInfo)
