# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Reductions: mean, reduce_sum/_mean/_max/_min/_prod and reduce_all/_any, and the grad ops of
the float ones.

After normalizing ``dim`` (negatives, duplicates, reduce_all), size-1 dims are dropped and
adjacent dims that are alike (all reduced or all kept) are merged. What remains is
[outer, reduced, inner] for a single reduced run, which is reduced in place: inner == 1 runs
along contiguous rows with 8 interleaved accumulators, inner > 1 accumulates whole rows into a
row buffer; both vectorize. Several reduced runs ([R, K, R], ...) are first transposed to kept dims + reduced
dims (one copy), giving [outer, reduced, 1].

Sums, means and products of floats accumulate in double (float32 included), of integers in
int64; max and min propagate NaN as NumPy does.
"""
cimport numpy as cnp
from cpython.object cimport PyObject
from headrace.kernels.common cimport contiguous, dtype_name, empty, real, shape_of, typenum
from ._common cimport is_nan, recycled

import numpy as np

from ..host.reduce import (FLOATS, NUMBERS, kernel_table, normalized_dims, out_shape,
                           reduce_attrs, runs as merged_runs)

cnp.import_array()

ctypedef fused num:
    float
    double
    int
    long long

ctypedef fused acc:
    double
    long long

cdef enum:
    SUM, MEAN, MAX, MIN, PROD, ALL, ANY   # host/reduce.py's codes, in the same order


cdef enum:
    LANES = 8     # independent accumulators along a contiguous row (see _row_sum)


cdef inline acc _row_sum(const num* p, Py_ssize_t R, bint prod, acc* lane) noexcept nogil:
    """Sum (or product) of p[0:R] in LANES interleaved partial results (``lane``: scratch):
    no chain of dependent adds, and the lanes vectorize (float32 widens to double on load)."""
    cdef Py_ssize_t r = 0, j, m = R - R % LANES
    for j in range(LANES):
        lane[j] = 1 if prod else 0
    if prod:
        while r < m:
            for j in range(LANES):
                lane[j] *= <acc>p[r + j]
            r += LANES
        for r in range(m, R):
            lane[0] *= <acc>p[r]
        return ((lane[0] * lane[1]) * (lane[2] * lane[3])) * \
            ((lane[4] * lane[5]) * (lane[6] * lane[7]))
    while r < m:
        for j in range(LANES):
            lane[j] += <acc>p[r + j]
        r += LANES
    for r in range(m, R):
        lane[0] += <acc>p[r]
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]))


cdef void _sum_prod(int code, const num* x, num* out, acc* buf, Py_ssize_t outer,
                    Py_ssize_t R, Py_ssize_t inner) noexcept nogil:
    """SUM, MEAN or PROD of each [R, inner] slab; ``buf`` holds inner accumulators."""
    cdef Py_ssize_t o, r, i
    cdef const num* p
    cdef acc s
    cdef acc lane[LANES]
    cdef bint prod = code == PROD
    for o in range(outer):
        p = x + o * R * inner
        if inner == 1:
            s = _row_sum(p, R, prod, lane)
            # The mean divides in double: R == 0 gives NaN (as NumPy), never a trap.
            out[o] = <num>(<double>s / <double>R) if code == MEAN else <num>s
            continue
        for i in range(inner):
            buf[i] = 1 if prod else 0
        for r in range(R):
            if prod:
                for i in range(inner):
                    buf[i] *= <acc>p[r * inner + i]
            else:
                for i in range(inner):
                    buf[i] += <acc>p[r * inner + i]
        if code == MEAN:
            for i in range(inner):
                out[o * inner + i] = <num>(<double>buf[i] / <double>R)
        else:
            for i in range(inner):
                out[o * inner + i] = <num>buf[i]


cdef inline num _pick(bint is_max, num kept, num v) noexcept nogil:
    """The running max/min after seeing v, as a select. A NaN, once kept, stays: every
    comparison with it is false. ``|``, not ``or``: no short-circuit branch, so the loops
    around it vectorize."""
    if is_max:
        return v if (v > kept) | is_nan(v) else kept
    return v if (v < kept) | is_nan(v) else kept


cdef void _extreme(bint is_max, const num* x, num* out, Py_ssize_t outer, Py_ssize_t R,
                   Py_ssize_t inner) noexcept nogil:
    """MAX or MIN (R >= 1): whole rows at a time into the output row (inner > 1), or
    LANES interleaved running values along a contiguous row (inner == 1)."""
    cdef Py_ssize_t o, r, i, j, m
    cdef const num* p
    cdef num* q
    cdef num lane[LANES]
    for o in range(outer):
        p = x + o * R * inner
        q = out + o * inner
        if inner == 1 and R >= LANES:
            m = R - R % LANES
            for j in range(LANES):
                lane[j] = p[j]
            r = LANES
            while r < m:
                for j in range(LANES):
                    lane[j] = _pick(is_max, lane[j], p[r + j])
                r += LANES
            for r in range(m, R):
                lane[0] = _pick(is_max, lane[0], p[r])
            for j in range(1, LANES):
                lane[0] = _pick(is_max, lane[0], lane[j])
            q[0] = lane[0]
            continue
        for i in range(inner):
            q[i] = p[i]
        for r in range(1, R):
            if is_max:
                for i in range(inner):
                    q[i] = _pick(True, q[i], p[r * inner + i])
            else:
                for i in range(inner):
                    q[i] = _pick(False, q[i], p[r * inner + i])


cdef void _logical(bint is_all, const unsigned char* x, unsigned char* out, Py_ssize_t outer,
                   Py_ssize_t R, Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t o, r, i
    cdef const unsigned char* p
    cdef unsigned char* q
    for o in range(outer):
        p = x + o * R * inner
        q = out + o * inner
        for i in range(inner):
            q[i] = is_all
        for r in range(R):
            if is_all:
                for i in range(inner):
                    q[i] &= p[r * inner + i] != 0
            else:
                for i in range(inner):
                    q[i] |= p[r * inner + i] != 0


cdef class Reduce:
    """One reduction op; ``dims`` None reduces everything (mean, reduce_all, dim=[])."""
    cdef int code
    cdef str name
    cdef object dims
    cdef bint keep_dim
    cdef object in_dtype, out_dtype
    cdef tuple cached

    def __init__(self, int code, str name, dict attrs):
        self.code, self.name = code, name
        self.keep_dim, self.dims, self.in_dtype, self.out_dtype = reduce_attrs(attrs)

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray res
        result_dtype = a.dtype
        if self.in_dtype is not None or self.out_dtype is not None:
            # Paddle casts X to out_dtype when it is set, else to in_dtype; Out has out_dtype,
            # else X's dtype.
            work = self.out_dtype if self.out_dtype is not None else self.in_dtype
            if self.out_dtype is not None:
                result_dtype = self.out_dtype
            if work != a.dtype:
                a = contiguous(a.astype(work))
        counted = typenum(a) == cnp.NPY_BOOL and self.code != ALL and self.code != ANY
        if counted:
            # Numbers of bools are counted in int64, then stored as bool (nonzero: True).
            a = contiguous(a.astype(np.int64))
        res = self._reduce(a)
        if counted:
            res = res.astype(np.bool_)
        if res.dtype != result_dtype:
            res = res.astype(result_dtype)
        return (res,)

    cdef tuple _plan(self, tuple dims):
        """(Out shape, outer, R, inner, transpose, reduced dims) for X of shape ``dims``;
        ``transpose`` is None or (the run shape to view X as, the order that puts the
        reduced runs last)."""
        red = normalized_dims(self.dims, len(dims), self.name)
        shape = out_shape(dims, red, self.keep_dim)
        # Runs of alike dims, size-1 dims dropped: [size, reduced] pairs.
        runs = [[r[0], r[2]] for r in merged_runs(dims, set(red))]
        cdef Py_ssize_t outer = 1, R = 1, inner = 1
        transpose = None
        if sum([1 for r in runs if r[1]]) > 1:
            # Several reduced runs: kept dims first, reduced ones last (one copy).
            transpose = ([r[0] for r in runs],
                         [i for i, r in enumerate(runs) if not r[1]] +
                         [i for i, r in enumerate(runs) if r[1]])
            for r in runs:
                if r[1]:
                    R *= r[0]
                else:
                    outer *= r[0]
        else:
            seen_red = False
            for r in runs:
                if r[1]:
                    R, seen_red = r[0], True
                elif seen_red:
                    inner *= r[0]
                else:
                    outer *= r[0]
        return shape, outer, R, inner, transpose, red

    cdef cnp.ndarray _reduce(self, cnp.ndarray a):
        cdef int t = typenum(a)
        self._check_dtype(t, a)
        dims = shape_of(a)
        # A kernel sees the same shape run after run: plan once per shape. One (dims, plan)
        # pair, replaced whole, so concurrent runs of a kernel never mix two shapes' plans.
        cached = self.cached
        if cached is None or cached[0] != dims:
            cached = self.cached = (dims, self._plan(dims))
        shape, outer_, R_, inner_, transpose, red = cached[1]
        cdef Py_ssize_t outer = outer_, R = R_, inner = inner_
        if transpose is not None:
            a = np.ascontiguousarray(a.reshape(transpose[0]).transpose(transpose[1]))
        cdef cnp.ndarray out = empty(shape, t)
        if outer * inner == 0:
            return out
        if R == 0 and (self.code == MAX or self.code == MIN):
            raise ValueError(f"{self.name}: X{list(dims)} has no elements to reduce along "
                             f"dim={red}, and {self.name} has no identity")
        self._dispatch(t, a, out, outer, R, inner)
        return out

    cdef int _check_dtype(self, int t, cnp.ndarray a) except -1:
        if self.code == ALL or self.code == ANY:
            if t == cnp.NPY_BOOL:
                return 0
            raise TypeError(f"{self.name}: X has dtype {dtype_name(a)}, expected bool")
        if t == cnp.NPY_FLOAT32 or t == cnp.NPY_FLOAT64:
            return 0
        if self.code != MEAN and (t == cnp.NPY_INT32 or t == cnp.NPY_INT64):
            return 0
        raise TypeError(f"{self.name}: X has dtype {dtype_name(a)}, expected " +
                        ("float32 or float64" if self.code == MEAN else
                         "float32, float64, int32 or int64"))

    cdef _dispatch(self, int t, cnp.ndarray a, cnp.ndarray out, Py_ssize_t outer,
                   Py_ssize_t R, Py_ssize_t inner):
        cdef void* px = cnp.PyArray_DATA(a)
        cdef void* po = cnp.PyArray_DATA(out)
        cdef int code = self.code
        cdef bint is_max = code == MAX
        cdef cnp.ndarray buf
        cdef void* pb = NULL
        if code == ALL or code == ANY:
            with nogil:
                _logical(code == ALL, <unsigned char*>px, <unsigned char*>po, outer, R, inner)
            return
        if code == MAX or code == MIN:
            with nogil:
                if t == cnp.NPY_FLOAT32:
                    _extreme(is_max, <float*>px, <float*>po, outer, R, inner)
                elif t == cnp.NPY_FLOAT64:
                    _extreme(is_max, <double*>px, <double*>po, outer, R, inner)
                elif t == cnp.NPY_INT32:
                    _extreme(is_max, <int*>px, <int*>po, outer, R, inner)
                else:
                    _extreme(is_max, <long long*>px, <long long*>po, outer, R, inner)
            return
        # Row accumulators (only used when inner > 1): double for floats, int64 for ints.
        cdef cnp.npy_intp n = inner
        if inner > 1:
            buf = cnp.PyArray_EMPTY(1, &n, cnp.NPY_FLOAT64 if t == cnp.NPY_FLOAT32 or
                                    t == cnp.NPY_FLOAT64 else cnp.NPY_INT64, 0)
            pb = cnp.PyArray_DATA(buf)
        with nogil:
            if t == cnp.NPY_FLOAT32:
                _sum_prod(code, <float*>px, <float*>po, <double*>pb, outer, R, inner)
            elif t == cnp.NPY_FLOAT64:
                _sum_prod(code, <double*>px, <double*>po, <double*>pb, outer, R, inner)
            elif t == cnp.NPY_INT32:
                _sum_prod(code, <int*>px, <int*>po, <long long*>pb, outer, R, inner)
            else:
                _sum_prod(code, <long long*>px, <long long*>po, <long long*>pb, outer, R,
                          inner)


# -- gradients --------------------------------------------------------------------------------
#
# X@GRAD is laid out like X in the forward plan: [outer, R, inner] for one reduced run (X's own
# memory order), or, for several reduced runs, X's runs transposed to kept + reduced ([outer,
# R, 1]) and the result transposed back. Out@GRAD is [outer, inner] in both.


cdef void _spread(int code, const real* g, real* dx, Py_ssize_t outer, Py_ssize_t R,
                  Py_ssize_t inner) noexcept nogil:
    """SUM / MEAN: every reduced position gets Out@GRAD (divided by R for the mean)."""
    cdef Py_ssize_t o, r, i
    cdef real v
    cdef real* p
    cdef const real* q
    cdef double n = <double>R
    for o in range(outer):
        q = g + o * inner
        if inner == 1:
            v = <real>(<double>q[0] / n) if code == MEAN else q[0]
            p = dx + o * R
            for r in range(R):
                p[r] = v
            continue
        for r in range(R):
            p = dx + (o * R + r) * inner
            if code == MEAN:
                for i in range(inner):
                    p[i] = <real>(<double>q[i] / n)
            else:
                for i in range(inner):
                    p[i] = q[i]


cdef void _route(const real* x, const real* out, const real* g, real* dx, Py_ssize_t outer,
                 Py_ssize_t R, Py_ssize_t inner) noexcept nogil:
    """MAX / MIN: Out@GRAD to every position equal to the result (a NaN result: its NaNs)."""
    cdef Py_ssize_t o, r, i
    cdef const real* p
    cdef real* q
    cdef real m, e
    for o in range(outer):
        for r in range(R):
            p = x + (o * R + r) * inner
            q = dx + (o * R + r) * inner
            for i in range(inner):
                m = out[o * inner + i]
                e = g[o * inner + i]      # loaded unconditionally: the select vectorizes
                q[i] = e if (p[i] == m) | (is_nan(p[i]) & is_nan(m)) else 0


cdef void _others(const real* x, const real* g, real* dx, double* buf, Py_ssize_t outer,
                  Py_ssize_t R, Py_ssize_t inner) noexcept nogil:
    """PROD: Out@GRAD times the product of the other reduced elements, as prefix times suffix
    products (in double; ``buf`` holds R * inner prefixes): no division, so a zero factor
    gives exact results (only its own position nonzero; two zeros: all zero)."""
    cdef Py_ssize_t o, r, i
    cdef const real* p
    cdef double* b
    cdef double* run = buf + R * inner       # inner running products
    for o in range(outer):
        p = x + o * R * inner
        for i in range(inner):
            run[i] = 1.0
        for r in range(R):
            b = buf + r * inner
            for i in range(inner):
                b[i] = run[i]
                run[i] *= p[r * inner + i]
        for i in range(inner):
            run[i] = 1.0
        for r in range(R - 1, -1, -1):
            b = buf + r * inner
            for i in range(inner):
                dx[(o * R + r) * inner + i] = <real>(g[o * inner + i] * b[i] * run[i])
                run[i] *= p[r * inner + i]


cdef class ReduceGrad(Reduce):
    """<reduce>_grad and mean_grad: (X, Out@GRAD) -> (X@GRAD,), or (X, Out, Out@GRAD) for
    reduce_max/_min. X@GRAD has X's shape and dtype; an Out@GRAD of another float dtype (the
    forward's out_dtype) is cast to X's first."""
    cdef bint reads_out
    cdef object _out       # the last X@GRAD, reused when nothing else holds it (recycled)

    def __init__(self, int code, str name, dict attrs):
        Reduce.__init__(self, code, name, attrs)
        self.reads_out = code == MAX or code == MIN

    def __call__(self, x, second, third=None):
        if self.reads_out and third is None:
            raise ValueError(f"{self.name}: takes X, Out and Out@GRAD")
        if not self.reads_out and third is not None:
            raise ValueError(f"{self.name}: takes X and Out@GRAD")
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = typenum(a)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"{self.name}: X has dtype {dtype_name(a)}, expected float32 or "
                            f"float64")
        cdef cnp.ndarray g = self._like(third if self.reads_out else second, a, "Out@GRAD")
        cdef cnp.ndarray o = self._like(second, a, "Out") if self.reads_out else g
        dims = shape_of(a)
        cached = self.cached
        if cached is None or cached[0] != dims:
            cached = self.cached = (dims, self._plan(dims))
        shape, outer_, R_, inner_, transpose, red = cached[1]
        gshape = shape_of(g)
        # A 0-D Out's gradient may come as one element of another rank ([1] in Fluid).
        if gshape != shape and not (shape == () and cnp.PyArray_SIZE(g) == 1):
            raise ValueError(f"{self.name}: Out@GRAD has shape {list(gshape)}, expected "
                             f"Out's {list(shape)} for X{list(dims)}")
        if self.reads_out and shape_of(o) != shape and not (
                shape == () and cnp.PyArray_SIZE(o) == 1):
            raise ValueError(f"{self.name}: Out has shape {list(shape_of(o))}, expected "
                             f"{list(shape)} for X{list(dims)}")
        cdef Py_ssize_t outer = outer_, R = R_, inner = inner_
        cdef cnp.ndarray xw = a
        cdef cnp.ndarray dx
        if cnp.PyArray_SIZE(a) == 0:
            return (empty(dims, t),)
        if transpose is not None:
            if self.code != SUM and self.code != MEAN:
                xw = np.ascontiguousarray(a.reshape(transpose[0]).transpose(transpose[1]))
            dx = empty(tuple([transpose[0][k] for k in transpose[1]]), t)
        else:
            dx = self._out = recycled(<PyObject*>self._out, dims, t)
        self._dispatch_grad(t, xw, o, g, dx, outer, R, inner)
        if transpose is not None:
            dx = np.ascontiguousarray(dx.transpose(np.argsort(transpose[1]))).reshape(dims)
        return (dx,)

    cdef cnp.ndarray _like(self, object v, cnp.ndarray a, str slot):
        cdef cnp.ndarray r = contiguous(v)
        if typenum(r) == typenum(a):
            return r
        if typenum(r) == cnp.NPY_FLOAT32 or typenum(r) == cnp.NPY_FLOAT64:
            return contiguous(r.astype(a.dtype))
        raise TypeError(f"{self.name}: {slot} has dtype {dtype_name(r)}, expected a float "
                        f"dtype like X's {dtype_name(a)}")

    cdef _dispatch_grad(self, int t, cnp.ndarray a, cnp.ndarray o, cnp.ndarray g,
                        cnp.ndarray dx, Py_ssize_t outer, Py_ssize_t R, Py_ssize_t inner):
        cdef void* px = cnp.PyArray_DATA(a)
        cdef void* po = cnp.PyArray_DATA(o)
        cdef void* pg = cnp.PyArray_DATA(g)
        cdef void* pd = cnp.PyArray_DATA(dx)
        cdef int code = self.code
        cdef cnp.ndarray buf
        cdef cnp.npy_intp n = (R + 1) * inner
        cdef double* pb
        if code == SUM or code == MEAN:
            with nogil:
                if t == cnp.NPY_FLOAT32:
                    _spread(code, <float*>pg, <float*>pd, outer, R, inner)
                else:
                    _spread(code, <double*>pg, <double*>pd, outer, R, inner)
        elif code == MAX or code == MIN:
            with nogil:
                if t == cnp.NPY_FLOAT32:
                    _route(<float*>px, <float*>po, <float*>pg, <float*>pd, outer, R, inner)
                else:
                    _route(<double*>px, <double*>po, <double*>pg, <double*>pd, outer, R,
                           inner)
        else:
            buf = cnp.PyArray_EMPTY(1, &n, cnp.NPY_FLOAT64, 0)
            pb = <double*>cnp.PyArray_DATA(buf)
            with nogil:
                if t == cnp.NPY_FLOAT32:
                    _others(<float*>px, <float*>pg, <float*>pd, pb, outer, R, inner)
                else:
                    _others(<double*>px, <double*>pg, <double*>pd, pb, outer, R, inner)


KERNELS = kernel_table(Reduce, ReduceGrad)
