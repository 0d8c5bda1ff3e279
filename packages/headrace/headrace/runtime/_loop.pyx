# cython: language_level=3, boundscheck=False, wraparound=False
"""The executor's hot loop: gather inputs by slot, call the kernel, store outputs by slot.

This is the only per-op cost beyond the kernels themselves, so it is Cython over cdef-class
instructions: no attribute dictionaries, no per-op allocation beyond the argument tuple.
Frame and LoD kernels (``layout`` set) get a Frame over the run's values instead.
"""
from .frame import Frame

cdef Py_ssize_t _failed = -1


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

    def __init__(self, fn, tuple in_ids, tuple out_ids, op, tuple lod_share, layout=None):
        self.fn = fn
        self.in_ids = in_ids
        self.out_ids = out_ids
        self.simple = all(type(i) is int for i in in_ids) and \
            all(type(i) is int for i in out_ids)
        self.frame = layout is not None
        self.op = op
        self.lod_share = lod_share
        self.layout = layout


def failed_index():
    """Index of the instruction whose kernel raised in the last failed run."""
    return _failed


cdef inline object _gather(list values, object ids):
    if type(ids) is int:
        return values[<Py_ssize_t>ids]
    return [values[<Py_ssize_t>i] for i in <tuple>ids]


def run(list instrs, list values, dict lods):
    """Run ``instrs`` over ``values`` (slot -> value) and ``lods`` (slot -> LoD)."""
    global _failed
    cdef Py_ssize_t k = 0, j, n, i
    cdef Instr ins
    cdef tuple ids, outs
    cdef object res, o
    try:
        for k in range(len(instrs)):
            ins = <Instr>instrs[k]
            ids = ins.in_ids
            n = len(ids)
            if ins.frame:
                ins.fn(Frame(ins.layout, values, lods))
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
    except BaseException:
        _failed = k
        raise
