# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""sequence_pool over the last LoD level: AVERAGE, SUM, SQRT, MAX, LAST, FIRST.

The kernel computes LoD (Out drops X's last level), so it is a LoD kernel: it receives X as a
Tensor (.data, .lod) and returns Tensors. The offsets are validated (start at 0, never
decrease, end at the row count) before any row is read. An empty sequence gives pad_value
(and MaxIndex -1 under MAX, as Paddle); MaxIndex holds the row of X each maximum came from
(the first such row on ties) and is 0 for the other pool types.

sequence_pool_grad(X, MaxIndex, Out@GRAD) -> X@GRAD (with X's LoD) spreads each sequence's
Out@GRAD row back: AVERAGE / len, SUM as is, SQRT / sqrt(len), MAX to the row MaxIndex names
(checked to lie in the sequence), LAST / FIRST to that row; other rows and empty sequences get
0. X is read for its LoD and shape only.
"""
cimport numpy as cnp
from libc.math cimport sqrt
from libc.string cimport memcpy
from headrace.kernels.common cimport contiguous, empty, prod, real, shape_of
from ._common cimport expect_shape, float_array

import numpy as np

cnp.import_array()

DTYPES = ("float32", "float64")
POOLTYPES = {"AVERAGE": 0, "SUM": 1, "SQRT": 2, "MAX": 3, "LAST": 4, "FIRST": 5}


cdef void _pool(const real* x, const long long* off, Py_ssize_t S, Py_ssize_t D, int kind,
                real pad, real* out, int* arg) noexcept nogil:
    cdef Py_ssize_t s, r, d, a, b
    cdef const real* src
    cdef real* dst
    cdef int* ai
    cdef double n
    for s in range(S):
        a, b = off[s], off[s + 1]
        dst = out + s * D
        ai = arg + s * D
        for d in range(D):
            ai[d] = 0
        if a == b:
            for d in range(D):
                dst[d] = pad
                if kind == 3:
                    ai[d] = -1
            continue
        if kind == 4 or kind == 5:
            memcpy(dst, x + (b - 1 if kind == 4 else a) * D, D * sizeof(real))
        elif kind == 3:
            memcpy(dst, x + a * D, D * sizeof(real))
            for d in range(D):
                ai[d] = <int>a
            for r in range(a + 1, b):
                src = x + r * D
                for d in range(D):
                    # A NaN is the maximum, wherever it sits (NumPy's max; MaxIndex: its first
                    # NaN, NumPy's argmax); a plain > kept it only when first.
                    if (src[d] > dst[d]) | ((src[d] != src[d]) & (dst[d] == dst[d])):
                        dst[d] = src[d]
                        ai[d] = <int>r
        else:
            memcpy(dst, x + a * D, D * sizeof(real))
            for r in range(a + 1, b):
                src = x + r * D
                for d in range(D):
                    dst[d] += src[d]
            n = <double>(b - a)
            if kind == 0:
                for d in range(D):
                    dst[d] = <real>(dst[d] / n)
            elif kind == 2:
                n = sqrt(n)
                for d in range(D):
                    dst[d] = <real>(dst[d] / n)


cdef class SequencePool:
    cdef int kind
    cdef double pad

    def __init__(self, dict attrs, info=None):
        ptype = attrs.get("pooltype", "AVERAGE")
        if ptype not in POOLTYPES:
            raise ValueError(f"sequence_pool: unknown pooltype {ptype!r}")
        self.kind = POOLTYPES[ptype]
        self.pad = attrs.get("pad_value", 0.0)

    def __call__(self, x):
        from headrace.runtime import Tensor
        lod = getattr(x, "lod", None)
        if not lod:
            raise ValueError("sequence_pool: X has no LoD; it must be a sequence batch "
                             "(a Tensor with at least one LoD level)")
        cdef cnp.ndarray a = contiguous(x.data)
        cdef int t = cnp.PyArray_TYPE(a)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"sequence_pool: X has dtype {a.dtype}, expected float32 or "
                            f"float64")
        cdef tuple xs = shape_of(a)
        if len(xs) < 1:
            raise ValueError("sequence_pool: X must have a row dim, got shape []")
        cdef Py_ssize_t rows = xs[0], D = prod(xs[1:])
        cdef cnp.ndarray off = np.asarray(lod[-1], dtype=np.int64).reshape(-1)
        if off.size < 1 or off[0] != 0 or off[-1] != rows or (np.diff(off) < 0).any():
            raise ValueError(f"sequence_pool: the last LoD level {list(lod[-1])} must start at "
                             f"0, not decrease, and end at X's {rows} rows")
        if rows > 2147483647:
            raise ValueError("sequence_pool: X has more rows than MaxIndex (int32) can name")
        off = np.ascontiguousarray(off)
        cdef Py_ssize_t S = off.size - 1
        cdef cnp.ndarray out = empty((S,) + xs[1:], t)
        cdef cnp.ndarray arg = empty((S,) + xs[1:], cnp.NPY_INT32)
        cdef const long long* op = <const long long*>cnp.PyArray_DATA(off)
        cdef int* ap = <int*>cnp.PyArray_DATA(arg)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _pool(<const float*>cnp.PyArray_DATA(a), op, S, D, self.kind, <float>self.pad,
                      <float*>cnp.PyArray_DATA(out), ap)
        else:
            with nogil:
                _pool(<const double*>cnp.PyArray_DATA(a), op, S, D, self.kind, self.pad,
                      <double*>cnp.PyArray_DATA(out), ap)
        return (Tensor(out, [list(level) for level in lod[:-1]]), Tensor(arg, []))


cdef Py_ssize_t _pool_grad(const real* dy, const long long* off, const int* arg, Py_ssize_t S,
                          Py_ssize_t D, int kind, real* dx) noexcept nogil:
    """dx (zeroed) += the adjoint of _pool; returns the first bad MaxIndex position, or -1."""
    cdef Py_ssize_t s, r, d, a, b, k
    cdef const real* g
    cdef real* dst
    cdef double n
    for s in range(S):
        a, b = off[s], off[s + 1]
        if a == b:
            continue
        g = dy + s * D
        if kind == 4 or kind == 5:
            dst = dx + (b - 1 if kind == 4 else a) * D
            for d in range(D):
                dst[d] = g[d]
        elif kind == 3:
            for d in range(D):
                k = arg[s * D + d]
                if k < a or k >= b:
                    return s * D + d
                dx[k * D + d] += g[d]
        else:
            n = <double>(b - a)
            if kind == 1:
                n = 1.0
            elif kind == 2:
                n = sqrt(n)
            for r in range(a, b):
                dst = dx + r * D
                for d in range(D):
                    dst[d] = <real>(g[d] / n)
    return -1


cdef class SequencePoolGrad:
    """sequence_pool_grad(X, MaxIndex, Out@GRAD) -> (X@GRAD,); a LoD kernel."""
    cdef int kind
    cdef bint want

    def __init__(self, dict attrs, info=None):
        ptype = attrs.get("pooltype", "AVERAGE")
        if ptype not in POOLTYPES:
            raise ValueError(f"sequence_pool_grad: unknown pooltype {ptype!r}")
        self.kind = POOLTYPES[ptype]
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, x, max_index, dout):
        from headrace.runtime import Tensor
        name = "sequence_pool_grad"
        lod = getattr(x, "lod", None)
        if not lod:
            raise ValueError(f"{name}: X has no LoD; it must be the forward's sequence batch")
        cdef cnp.ndarray a = float_array(x.data, name, "X")
        cdef cnp.ndarray g = float_array(getattr(dout, "data", dout), name, "Out@GRAD")
        if cnp.PyArray_TYPE(g) != cnp.PyArray_TYPE(a):
            raise TypeError(f"{name}: Out@GRAD has dtype {g.dtype} but X is {a.dtype}")
        cdef tuple xs = shape_of(a)
        if len(xs) < 1:
            raise ValueError(f"{name}: X must have a row dim, got shape []")
        cdef Py_ssize_t rows = xs[0], D = prod(xs[1:])
        cdef cnp.ndarray off = np.asarray(lod[-1], dtype=np.int64).reshape(-1)
        if off.size < 1 or off[0] != 0 or off[-1] != rows or (np.diff(off) < 0).any():
            raise ValueError(f"{name}: the last LoD level {list(lod[-1])} must start at 0, "
                             f"not decrease, and end at X's {rows} rows")
        off = np.ascontiguousarray(off)
        cdef Py_ssize_t S = off.size - 1, bad = -1
        expect_shape(g, (S,) + xs[1:], name, "Out@GRAD", "Out's shape")
        cdef cnp.ndarray arg = None
        cdef const int* ap = NULL
        if self.kind == 3:
            if max_index is None:
                raise ValueError(f"{name}: MAX pooling needs MaxIndex")
            arg = contiguous(getattr(max_index, "data", max_index))
            if cnp.PyArray_TYPE(arg) != cnp.NPY_INT32:
                raise TypeError(f"{name}: MaxIndex has dtype {arg.dtype}, expected int32")
            expect_shape(arg, (S,) + xs[1:], name, "MaxIndex", "Out's shape")
            ap = <const int*>cnp.PyArray_DATA(arg)
        if not self.want:
            return (None,)
        cdef cnp.ndarray dx = np.zeros(xs, a.dtype)
        cdef const long long* op = <const long long*>cnp.PyArray_DATA(off)
        if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT32:
            with nogil:
                bad = _pool_grad(<const float*>cnp.PyArray_DATA(g), op, ap, S, D, self.kind,
                                 <float*>cnp.PyArray_DATA(dx))
        else:
            with nogil:
                bad = _pool_grad(<const double*>cnp.PyArray_DATA(g), op, ap, S, D, self.kind,
                                 <double*>cnp.PyArray_DATA(dx))
        if bad >= 0:
            s = bad // D if D else 0
            raise IndexError(f"{name}: MaxIndex value {arg.reshape(-1)[bad]} (position {bad}) "
                             f"is not a row of sequence {s} [{off[s]}, {off[s + 1]})")
        return (Tensor(dx, [list(level) for level in lod]),)


# LoD kernels: the plan passes Tensors and takes the outputs' LoD from them.
KERNELS = [("sequence_pool", SequencePool, DTYPES, "lod"),
           ("sequence_pool_grad", SequencePoolGrad, DTYPES, "lod")]
