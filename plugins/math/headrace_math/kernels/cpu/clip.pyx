# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""clip and clip_grad. The bounds are resolved once per call (the Min/Max tensors, else the
attributes; for integer X the float bounds are truncated into the type's range, as Paddle's
cast does), then one pass in C."""
cimport numpy as cnp
from headrace.kernels.common cimport contiguous, empty_like, typenum

import numpy as np

cnp.import_array()

DTYPES = ("float32", "float64", "int32", "int64")
FLOATS = ("float32", "float64")

ctypedef fused num:
    float
    double
    int
    long long


cdef void _clip(const num* x, num* out, Py_ssize_t n, num lo, num hi) noexcept nogil:
    cdef Py_ssize_t i
    cdef num v
    for i in range(n):
        v = x[i]
        out[i] = lo if v < lo else (hi if v > hi else v)


cdef void _clip_grad(const num* x, const num* g, num* dx, Py_ssize_t n, num lo, num hi,
                     double* below, double* above) noexcept nogil:
    cdef Py_ssize_t i
    cdef num v
    for i in range(n):
        v = x[i]
        if v > lo and v < hi:
            if dx != NULL:
                dx[i] = g[i]
        else:
            if dx != NULL:
                dx[i] = 0
            if v < lo:
                below[0] += g[i]
            elif v > hi:
                above[0] += g[i]


cdef class _ClipBase:
    cdef double lo, hi
    cdef str names

    def __init__(self, dict attrs, info=None):
        self.lo, self.hi = attrs["min"], attrs["max"]

    cdef tuple _bounds(self, cnp.ndarray a, object mn, object mx, str op):
        lo = self.lo if mn is None else _one(mn, op, "Min")
        hi = self.hi if mx is None else _one(mx, op, "Max")
        if lo > hi:
            raise ValueError(f"{op}: the lower bound {lo} exceeds the upper bound {hi}")
        if a.dtype.kind in "iu":
            info = np.iinfo(a.dtype)
            lo = int(min(max(np.trunc(lo), info.min), info.max))
            hi = int(min(max(np.trunc(hi), info.min), info.max))
        return lo, hi


cdef object _one(object t, str op, str slot):
    v = np.asarray(t)
    if v.size != 1:
        raise ValueError(f"{op}: input '{slot}' must hold one element, got shape "
                         f"{list(v.shape)}")
    return v.reshape(-1)[0].item()


cdef class Clip(_ClipBase):
    def __call__(self, x, mn=None, mx=None):
        cdef cnp.ndarray a = contiguous(x)
        lo, hi = self._bounds(a, mn, mx, "clip")
        cdef cnp.ndarray out = empty_like(a)
        cdef Py_ssize_t n = a.size
        cdef int t = typenum(a)
        if t == cnp.NPY_FLOAT32:
            _clip(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out), n,
                  <float>lo, <float>hi)
        elif t == cnp.NPY_FLOAT64:
            _clip(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out), n,
                  <double>lo, <double>hi)
        elif t == cnp.NPY_INT32:
            _clip(<const int*>cnp.PyArray_DATA(a), <int*>cnp.PyArray_DATA(out), n,
                  <int>lo, <int>hi)
        elif t == cnp.NPY_INT64 or t == cnp.NPY_LONGLONG:
            _clip(<const long long*>cnp.PyArray_DATA(a), <long long*>cnp.PyArray_DATA(out), n,
                  <long long>lo, <long long>hi)
        else:
            raise TypeError(f"clip: X has dtype {a.dtype.name}, expected one of "
                            f"{', '.join(DTYPES)}")
        return (out,)


cdef class ClipGrad(_ClipBase):
    cdef bint want_x, want_min, want_max

    def __init__(self, dict attrs, info=None):
        _ClipBase.__init__(self, attrs, info)
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_min = info is None or info.wants("Min@GRAD")
        self.want_max = info is None or info.wants("Max@GRAD")

    def __call__(self, x, mn, mx, dout):
        cdef cnp.ndarray a = contiguous(x), g = contiguous(dout)
        if np.shape(a) != np.shape(g) or a.dtype != g.dtype:
            raise ValueError(f"clip_grad: Out@GRAD ({g.dtype.name}{list(np.shape(g))}) must "
                             f"have X's shape and dtype ({a.dtype.name}{list(np.shape(a))})")
        lo, hi = self._bounds(a, mn, mx, "clip_grad")
        cdef cnp.ndarray dx = empty_like(a) if self.want_x else None
        cdef double below = 0, above = 0
        cdef Py_ssize_t n = a.size
        if typenum(a) == cnp.NPY_FLOAT64:
            _clip_grad(<const double*>cnp.PyArray_DATA(a), <const double*>cnp.PyArray_DATA(g),
                       <double*>cnp.PyArray_DATA(dx) if dx is not None else NULL, n,
                       <double>lo, <double>hi, &below, &above)
        elif typenum(a) == cnp.NPY_FLOAT32:
            _clip_grad(<const float*>cnp.PyArray_DATA(a), <const float*>cnp.PyArray_DATA(g),
                       <float*>cnp.PyArray_DATA(dx) if dx is not None else NULL, n,
                       <float>lo, <float>hi, &below, &above)
        else:
            raise TypeError(f"clip_grad: X has dtype {a.dtype.name}, expected float32 or "
                            f"float64")
        dmin = np.full(np.shape(mn), below, a.dtype) if self.want_min and mn is not None \
            else None
        dmax = np.full(np.shape(mx), above, a.dtype) if self.want_max and mx is not None \
            else None
        return dx, dmin, dmax


KERNELS = [("clip", Clip, DTYPES), ("clip_grad", ClipGrad, FLOATS)]
