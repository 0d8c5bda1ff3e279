# cython: language_level=3, boundscheck=False, wraparound=False
"""The executor's hot loop: gather inputs by slot, call the kernel, store outputs by slot.

This is the only per-op cost beyond the kernels themselves, so it is Cython over cdef-class
instructions: no attribute dictionaries, no per-op allocation beyond the argument tuple.
Frame and LoD kernels (``layout`` set) get a Frame over the run's values instead; Frame is
here, a cdef class too, since control flow calls it on every loop step (docs/kernels.md).
"""
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from numpy import ndarray

from .tensor import Tensor

cdef Py_ssize_t _failed = -1


cdef class Frame:
    """One op's view of a run's variables, by slot name (``headrace.runtime.frame``).

    Reading: ``input(slot)`` (the value of a slot's single variable, None when unbound),
    ``inputs(slot)`` (a list, for duplicable slots), ``lod(slot)``, ``tensor(slot)`` /
    ``tensors(slot)`` (value and LoD together), ``output(slot)`` (an output variable's
    current value, say an array being appended to). Writing: ``set_output(slot, value,
    lod=None)`` and ``set_outputs(slot, values, lods=None)``. Sub-blocks: ``run(plan)`` runs a
    plan from ``info.subplan(attr)`` over the same variables, ``snapshot(plan)`` keeps the
    values of its local variables (one step scope), ``capture(ids)``/``restore(captured)``/
    ``load(i)``/``store(i, ...)`` read and write slot indices a sub-plan names. A slot name the op's definition does not
    have is a KeyError naming the op.
    """
    # One Frame per call: a plan may run in several threads at once.
    cdef object _layout
    cdef dict _ins, _outs, _lods
    cdef list _values

    def __init__(self, layout, list values, dict lods):
        self._layout, self._ins, self._outs = layout, layout.ins, layout.outs
        self._values, self._lods = values, lods

    @property
    def op_type(self):
        return self._layout.op_type

    cdef tuple _ids(self, dict table, object slot, str role):
        ids = table.get(slot)
        if ids is None:
            raise self._layout.no_slot(slot, role)
        return <tuple>ids

    # -- reading --------------------------------------------------------------------------
    def input(self, slot):
        cdef tuple ids = self._ids(self._ins, slot, "input")
        return self._values[<Py_ssize_t>ids[0]] if ids else None

    def inputs(self, slot):
        return [self._values[<Py_ssize_t>i] for i in self._ids(self._ins, slot, "input")]

    def lod(self, slot):
        cdef tuple ids = self._ids(self._ins, slot, "input")
        return self._lods.get(ids[0]) if ids else None

    def tensor(self, slot):
        """Input ``slot``'s value and LoD as a Tensor (None when unbound)."""
        cdef tuple ids = self._ids(self._ins, slot, "input")
        if not ids:
            return None
        return Tensor(self._values[<Py_ssize_t>ids[0]], self._lods.get(ids[0]))

    def tensors(self, slot):
        return [Tensor(self._values[<Py_ssize_t>i], self._lods.get(i))
                for i in self._ids(self._ins, slot, "input")]

    def output(self, slot):
        """The current value of output ``slot``'s variable (None before its first write)."""
        cdef tuple ids = self._ids(self._outs, slot, "output")
        if ids and <Py_ssize_t>ids[0] > 0:
            return self._values[<Py_ssize_t>ids[0]]
        return None

    # -- writing --------------------------------------------------------------------------
    def set_output(self, slot, value, lod=None):
        """Store ``value`` (with ``lod``; None clears it) in output ``slot``'s variable.
        Writing an unbound or ``@EMPTY@`` output is a no-op."""
        cdef tuple ids = self._ids(self._outs, slot, "output")
        if ids:
            self._put(<Py_ssize_t>ids[0], value, lod)

    def set_outputs(self, slot, values, lods=None):
        """Store one value per variable of a duplicable output slot."""
        cdef tuple ids = self._ids(self._outs, slot, "output")
        if len(values) != len(ids):
            raise ValueError(f"{self.op_type}: {len(values)} values for output '{slot}', "
                             f"which is bound to {len(ids)} variables")
        for n in range(len(ids)):
            self._put(<Py_ssize_t>ids[n], values[n], lods[n] if lods is not None else None)

    def output_ids(self, slot):
        """The slot indices of output ``slot``'s variables (for the plan's LoD adapter)."""
        return self._ids(self._outs, slot, "output")

    def store(self, Py_ssize_t i, value, lod):
        """Store into slot index ``i`` (from ``output_ids``); -1 (``@EMPTY@``) is skipped."""
        self._put(i, value, lod)

    cdef _put(self, Py_ssize_t i, value, lod):
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
        return self.capture(plan.local_ids)

    def capture(self, ids):
        """``{slot index: (value, LoD)}`` for the slot indices ``ids`` (from a plan's
        ``local_ids``/``outer_write_ids`` or ``slot_named``)."""
        return {i: (self._values[<Py_ssize_t>i], self._lods.get(i)) for i in ids}

    def restore(self, dict captured):
        """Put back values (and LoD) from :meth:`capture` or :meth:`snapshot`."""
        for i, (value, lod) in captured.items():
            self._put(<Py_ssize_t>i, value, lod)

    def load(self, Py_ssize_t i):
        """The value in slot index ``i`` (a sub-plan's ``slot_named``)."""
        return self._values[i]


cdef inline Frame _frame(object layout, list values, dict lods):
    cdef Frame f = Frame.__new__(Frame)
    f._layout, f._ins, f._outs = layout, layout.ins, layout.outs
    f._values, f._lods = values, lods
    return f


cdef class Instr:
    """One kernel call. in_ids/out_ids: per slot an int (slot index; 0 = None input, -1 =
    unbound output) or a tuple of ints (duplicable slot). ``layout``: the FrameLayout of a
    frame or LoD kernel (called as ``fn(frame)``), None for an array kernel."""
    cdef public object fn
    cdef public tuple in_ids
    cdef public tuple out_ids
    cdef public bint simple
    cdef public bint frame
    cdef public object op
    cdef public tuple lod_share
    cdef public object layout
    cdef public tuple drop   # slots whose values die here: set to None after the call
    # The outputs a first run checks (run_checked), as the plan found them when it prepared
    # the op (_prepare.output_checks): (slot, NumPy dtype or None, declared rank or -1)
    # flattened; None: not yet.
    cdef public tuple checks

    def __init__(self, fn, tuple in_ids, tuple out_ids, op, tuple lod_share, layout=None,
                 tuple checks=None):
        self.fn = fn
        self.in_ids = in_ids
        self.out_ids = out_ids
        self.simple = _all_ints(in_ids) and _all_ints(out_ids)
        self.frame = layout is not None
        self.op = op
        self.lod_share = lod_share
        self.layout = layout
        self.drop = ()   # (runtime.liveness sets it on a root plan's instructions)
        self.checks = checks   # (the plan's, as it prepares the op: _prepare.output_checks)


cdef bint _all_ints(tuple ids):
    """Whether every id is one slot (no duplicable slot's tuple of them): a loop, not
    ``all()`` over a generator, which cost ~0.3 us an instruction of a plan being prepared."""
    for i in ids:
        if type(i) is not int:
            return False
    return True


def last_uses(list instrs, Py_ssize_t nslots):
    """Per slot (``nslots`` of them), the index of the last of ``instrs`` that reads or
    writes it, -1 for none (runtime.liveness: the walk over a 1603-op plan's slots took
    ~0.5 ms of its first step in Python). Walked over a C array: storing each use's index
    into a list made an int object per use (~6,000 of them above 256)."""
    cdef Py_ssize_t* last = <Py_ssize_t*>PyMem_Malloc(max(nslots, 1) * sizeof(Py_ssize_t))
    if last == NULL:
        raise MemoryError()
    cdef Py_ssize_t k, i
    cdef Instr ins
    cdef object ids, x, j
    try:
        for i in range(nslots):
            last[i] = -1
        for k in range(len(instrs)):
            ins = <Instr>instrs[k]
            for ids in (ins.in_ids, ins.out_ids):
                for x in <tuple>ids:
                    if type(x) is int:
                        i = <Py_ssize_t>x
                        if 0 < i < nslots:
                            last[i] = k
                    else:
                        for j in <tuple>x:
                            i = <Py_ssize_t>j
                            if 0 < i < nslots:
                                last[i] = k
        return [last[i] for i in range(nslots)]
    finally:
        PyMem_Free(last)


def set_drops(list instrs, list last, list facts, keep):
    """Set each instruction's ``drop`` to the slots whose last use it is (``last``, from
    ``last_uses``) among those of dense non-persistable variables (``facts``: slot ->
    ``(kind, SlotVar)``) not in ``keep``, in ascending order. Returns how many."""
    cdef Py_ssize_t i, k, n = 0, nslots = len(last)
    cdef list per = [None] * len(instrs)
    cdef tuple f
    cdef bytearray kept = bytearray(nslots)   # (``i in keep`` made an int object per slot)
    for i in keep:
        if 0 <= i < nslots:
            kept[i] = 1
    for i in range(1, nslots):
        k = <Py_ssize_t>last[i]
        if k < 0 or kept[i]:
            continue
        f = <tuple>facts[i]
        if f[0] != "lod_tensor" or (<tuple>f[1])[4]:   # SlotVar.persistable
            continue
        if per[k] is None:
            per[k] = [i]
        else:
            (<list>per[k]).append(i)
        n += 1
    for k in range(len(instrs)):
        if per[k] is not None:
            (<Instr>instrs[k]).drop = tuple(<list>per[k])
    return n


def failed_index():
    """Index of the instruction whose kernel raised in the last failed run."""
    return _failed


cdef inline object _gather(list values, object ids):
    if type(ids) is int:
        return values[<Py_ssize_t>ids]
    return [values[<Py_ssize_t>i] for i in <tuple>ids]


cdef inline void _drop(tuple ids, list values):
    cdef object i
    for i in ids:
        values[<Py_ssize_t>i] = None


cdef int _run(list instrs, Py_ssize_t start, Py_ssize_t stop, list values,
              dict lods, bint drop=True) except -1:
    """Run ``instrs[start:stop]``; a failing one's index goes to ``_failed``. ``drop``: let
    go of the values each instruction's ``drop`` names once it returns (runtime.liveness)."""
    global _failed
    cdef Py_ssize_t k = start, j, n, i
    cdef Instr ins
    cdef tuple ids, outs
    cdef object res, o
    try:
        for k in range(start, stop):
            ins = <Instr>instrs[k]
            ids = ins.in_ids
            n = len(ids)
            if ins.frame:
                ins.fn(_frame(ins.layout, values, lods))
                if drop and ins.drop:
                    _drop(ins.drop, values)
                continue
            if ins.simple:
                if n == 1:
                    res = ins.fn(values[<Py_ssize_t>ids[0]])
                elif n == 2:
                    res = ins.fn(values[<Py_ssize_t>ids[0]], values[<Py_ssize_t>ids[1]])
                elif n == 0:
                    res = ins.fn()
                else:
                    res = ins.fn(*[values[<Py_ssize_t>x] for x in ids])
                outs = ins.out_ids
                if len(res) != len(outs):
                    raise ValueError(f"the kernel returned {len(res)} outputs, the op "
                                     f"definition has {len(outs)} output slots")
                for j in range(len(outs)):
                    i = <Py_ssize_t>outs[j]
                    if i > 0:
                        values[i] = res[j]
            else:
                res = ins.fn(*[_gather(values, x) for x in ids])
                outs = ins.out_ids
                if len(res) != len(outs):
                    raise ValueError(f"the kernel returned {len(res)} outputs, the op "
                                     f"definition has {len(outs)} output slots")
                for j in range(len(outs)):
                    o = outs[j]
                    if type(o) is int:
                        if <Py_ssize_t>o > 0:
                            values[<Py_ssize_t>o] = res[j]
                    else:
                        if len(res[j]) != len(<tuple>o):
                            raise ValueError(f"the kernel returned {len(res[j])} values for "
                                             f"a slot bound to {len(<tuple>o)} variables")
                        for n, x in enumerate(res[j]):
                            i = <Py_ssize_t>(<tuple>o)[n]
                            if i > 0:  # @EMPTY@ entries of a duplicable output are -1
                                values[i] = x
            if ins.lod_share:
                for src, dst in ins.lod_share:
                    if src in lods:
                        lods[dst] = lods[src]
            if drop and ins.drop:
                _drop(ins.drop, values)
    except BaseException:
        _failed = k
        raise
    return 0


def run(list instrs, list values, dict lods):
    """Run ``instrs`` over ``values`` (slot -> value) and ``lods`` (slot -> LoD)."""
    _run(instrs, 0, len(instrs), values, lods)


def run_checked(list instrs, list values, dict lods, checks_of, check):
    """``run``, checking each instruction's outputs as it returns (a plan's first run of a
    feed signature: ``Plan._check_outputs``). The usual output passes here: an ndarray whose
    dtype is its variable's declared one and whose rank the declared one (or none declared),
    as ``Instr.checks`` lists them (``_prepare.output_checks``; ``checks_of(instr)`` makes
    them for an instruction without); any other value goes to ``check(instr, (i,), values)``, the plan's
    rule, which raises or lets it pass."""
    global _failed
    cdef Py_ssize_t k = 0, j, i, r
    cdef Instr ins
    cdef tuple c
    cdef object v
    try:
        for k in range(len(instrs)):
            ins = <Instr>instrs[k]
            _run(instrs, k, k + 1, values, lods, False)   # dead outputs checked, then dropped
            c = ins.checks
            if c is None:
                c = ins.checks = <tuple>checks_of(ins)
            for j in range(0, len(c), 3):
                i = <Py_ssize_t>c[j]
                v = values[i]
                if v is None:
                    continue   # (no dtype: the rule skips it)
                if type(v) is ndarray and v.dtype is c[j + 1]:
                    r = <Py_ssize_t>c[j + 2]
                    if r < 0 or r == v.ndim:
                        continue
                check(ins, (i,), values)
            if ins.drop:
                _drop(ins.drop, values)
    except BaseException:
        _failed = k
        raise
