# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""clip and clip_grad. The bounds are resolved once per call (the Min/Max tensors, else the
attributes; for integer X the float bounds are truncated into the type's range, as Paddle's
cast does), then one pass in C. clip_by_norm, squared_l2_norm and its gradient: one pass for
the squares' sum (in double), one to scale."""
cimport numpy as cnp
from libc.math cimport sqrt
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


# -- clip_by_norm, squared_l2_norm ----------------------------------------------------------------

ctypedef fused real:
    float
    double


cdef double _sum_squares(const real* x, Py_ssize_t n) noexcept nogil:
    """In double: a float32 gradient's squares summed without float32 rounding."""
    cdef Py_ssize_t i
    cdef double s = 0
    for i in range(n):
        s += <double>x[i] * <double>x[i]
    return s


cdef void _scaled(const real* x, real* out, Py_ssize_t n, real f) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = x[i] * f


cdef int _float_x(str op, cnp.ndarray a) except -1:
    if typenum(a) != cnp.NPY_FLOAT32 and typenum(a) != cnp.NPY_FLOAT64:
        raise TypeError(f"{op}: X has dtype {a.dtype.name}, expected float32 or float64")
    return typenum(a)


cdef class ClipByNorm:
    cdef double max_norm

    def __init__(self, dict attrs, info=None):
        self.max_norm = attrs["max_norm"]

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = _float_x("clip_by_norm", a)
        cdef cnp.ndarray out = empty_like(a)
        cdef Py_ssize_t n = a.size
        cdef double s
        cdef float nf, sf
        cdef double nd, sd
        if t == cnp.NPY_FLOAT32:
            s = _sum_squares(<const float*>cnp.PyArray_DATA(a), n)
            # Paddle's arithmetic in X's type: the norm, the 1e-6 a norm <= 1e-30 gets, the
            # scale max_norm / (norm + eps) when the norm exceeds max_norm, else 1.
            nf = <float>sqrt(s)
            sf = 1.0 if nf <= <float>self.max_norm else \
                <float>self.max_norm / (nf + (<float>1e-6 if nf <= <float>1e-30 else 0))
            _scaled(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out), n, sf)
        else:
            s = _sum_squares(<const double*>cnp.PyArray_DATA(a), n)
            nd = sqrt(s)
            sd = 1.0 if nd <= self.max_norm else \
                self.max_norm / (nd + (1e-6 if nd <= 1e-30 else 0))
            _scaled(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out), n, sd)
        return (out,)


cdef class SquaredL2Norm:
    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = _float_x("squared_l2_norm", a)
        cdef double s
        if t == cnp.NPY_FLOAT32:
            s = _sum_squares(<const float*>cnp.PyArray_DATA(a), a.size)
        else:
            s = _sum_squares(<const double*>cnp.PyArray_DATA(a), a.size)
        return (np.array([s], dtype=a.dtype),)


cdef class SquaredL2NormGrad:
    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, dout):
        cdef cnp.ndarray a = contiguous(x), g = contiguous(dout)
        cdef int t = _float_x("squared_l2_norm_grad", a)
        if g.size != 1:
            raise ValueError(f"squared_l2_norm_grad: Out@GRAD has shape {list(np.shape(g))}, "
                             f"expected one element")
        if g.dtype != a.dtype:
            raise TypeError(f"squared_l2_norm_grad: Out@GRAD has dtype {g.dtype.name}, "
                            f"expected X's {a.dtype.name}")
        cdef cnp.ndarray dx = empty_like(a)
        # Paddle's order: Out@GRAD * X, then times 2 (exact), in X's type.
        if t == cnp.NPY_FLOAT32:
            _scaled(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(dx), a.size,
                    <float>(2 * (<const float*>cnp.PyArray_DATA(g))[0]))
        else:
            _scaled(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(dx), a.size,
                    2 * (<const double*>cnp.PyArray_DATA(g))[0])
        return (dx,)


KERNELS += [("clip_by_norm", ClipByNorm, FLOATS), ("squared_l2_norm", SquaredL2Norm, FLOATS),
            ("squared_l2_norm_grad", SquaredL2NormGrad, FLOATS)]
