# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Matrix products through BLAS: mul (X flattened to 2-D at x_num_col_dims times Y flattened at
y_num_col_dims) and matmul / matmul_v2 (NumPy matmul: transposes, 1-D operands, broadcast
batch dims), and their grad ops.

Row-major C = A @ B is computed as the column-major product C^T = B^T A^T, so the arrays are
passed to sgemm/dgemm without any copy or transpose. matmul reads each operand's matrices in
place whenever BLAS can (rows or columns contiguous, any leading dimension, any batch strides,
a column-major matrix being a transposed row-major one) and copies only an operand it cannot.
"""
cimport numpy as cnp
from ._gemm cimport gemm_rowmajor
from cpython.object cimport PyObject
from headrace.kernels.common cimport _normalized, behaved, contiguous, dtype_name, shape_of, typenum
from ._common cimport recycled

import numpy as np

from ._gemm import use_packed_gemm  # noqa: F401  (a switch the tests use)

cnp.import_array()

DTYPES = ("float32", "float64")
cdef Py_ssize_t INT_MAX = 2147483647


cdef Py_ssize_t _prod(tuple dims):
    cdef Py_ssize_t n = 1
    for d in dims:
        n *= <Py_ssize_t>d
    return n


cdef class Mul:
    cdef int xn, yn
    cdef object _out       # the last result, reused when nothing else holds it (recycled)

    def __init__(self, dict attrs, info=None):
        self.xn = attrs["x_num_col_dims"]
        self.yn = attrs["y_num_col_dims"]

    def __call__(self, x, y):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef int t = typenum(a)
        if t != typenum(b) or (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64):
            raise TypeError(f"mul: X and Y must both be float32 or float64, got "
                            f"{dtype_name(a)} and {dtype_name(b)}")
        cdef tuple xs = shape_of(a), ys = shape_of(b)
        if not 0 < self.xn < len(xs) or not 0 < self.yn < len(ys):
            raise ValueError(f"mul: x_num_col_dims={self.xn} / y_num_col_dims={self.yn} do not "
                             f"fit X{list(xs)} / Y{list(ys)}")
        cdef Py_ssize_t M = _prod(xs[:self.xn]), K = _prod(xs[self.xn:])
        cdef Py_ssize_t K2 = _prod(ys[:self.yn]), N = _prod(ys[self.yn:])
        if K != K2:
            raise ValueError(f"mul: X{list(xs)} flattens to [{M}, {K}] but Y{list(ys)} "
                             f"flattens to [{K2}, {N}]")
        if M > INT_MAX or N > INT_MAX or K > INT_MAX:
            raise ValueError("mul: a matrix dimension exceeds the BLAS int range")
        cdef cnp.ndarray out = recycled(<PyObject*>self._out, xs[:self.xn] + ys[self.yn:], t)
        self._out = out
        if M == 0 or N == 0:
            return (out,)
        if K == 0:
            out.fill(0)
            return (out,)
        with nogil:
            gemm_rowmajor(t, False, False, <int>M, <int>N, <int>K, 1.0,
                          cnp.PyArray_DATA(a), <int>K, cnp.PyArray_DATA(b), <int>N, 0.0,
                          cnp.PyArray_DATA(out), <int>N)
        return (out,)


# -- matmul / matmul_v2 -----------------------------------------------------------------------

cdef enum:
    MAXDIM = 64   # NPY_MAXDIMS of NumPy 2


# One operand's matrices as BLAS sees them: row-major stored with leading dimension ld,
# op(M) = stored^T when trans; byte strides over the output's batch dims (0: broadcast).
cdef struct Mat:
    char* data
    int ld
    bint trans
    Py_ssize_t bstride[MAXDIM]


cdef bint _layout(Py_ssize_t r, Py_ssize_t c, Py_ssize_t s0, Py_ssize_t s1, bint trans,
                  Mat* m) noexcept:
    """Can BLAS read the r x c matrix with element strides (s0, s1) in place? Sets ld and
    whether BLAS must transpose it. A stride of a size-1 dim is never used, so it never
    blocks; BLAS needs ld >= max(1, stored cols) and an int."""
    cdef Py_ssize_t ld
    if (s1 == 1 or c == 1) and (r == 1 or s0 >= max(c, 1)):
        ld = s0 if r > 1 else max(c, 1)
        if ld <= INT_MAX:
            m.ld, m.trans = <int>ld, trans
            return True
    # Column-major: the row-major storage of the transpose [c, r].
    if (s0 == 1 or r == 1) and (c == 1 or s1 >= max(r, 1)):
        ld = s1 if c > 1 else max(r, 1)
        if ld <= INT_MAX:
            m.ld, m.trans = <int>ld, not trans
            return True
    return False


cdef cnp.ndarray _readable(object v):
    """``v`` as an ndarray typed pointers can walk with its own strides: aligned, native byte
    order, strides in whole elements; any other layout is copied to C order."""
    cdef cnp.ndarray a
    cdef int i
    cdef Py_ssize_t item
    if type(v) is cnp.ndarray and behaved(<cnp.ndarray>v):
        a = <cnp.ndarray>v
        item = cnp.PyArray_ITEMSIZE(a)
        for i in range(cnp.PyArray_NDIM(a)):
            if cnp.PyArray_STRIDES(a)[i] % item:
                return _normalized(a)
        return a
    return _normalized(v)


cdef void _batched(int t, Mat* x, Mat* y, char* out, Py_ssize_t out_bytes, int nb,
                   const Py_ssize_t* bdims, int M, int N, int K, double alpha) noexcept nogil:
    """One GEMM per output batch entry, walking the batch dims with an odometer."""
    cdef Py_ssize_t idx[MAXDIM]
    cdef Py_ssize_t ox = 0, oy = 0, o = 0
    cdef int d
    for d in range(nb):
        idx[d] = 0
    while True:
        gemm_rowmajor(t, x.trans, y.trans, M, N, K, alpha, x.data + ox, x.ld, y.data + oy,
                      y.ld, 0.0, out + o, N)
        o += out_bytes
        d = nb - 1
        while d >= 0:
            idx[d] += 1
            ox += x.bstride[d]
            oy += y.bstride[d]
            if idx[d] < bdims[d]:
                break
            ox -= x.bstride[d] * bdims[d]
            oy -= y.bstride[d] * bdims[d]
            idx[d] = 0
            d -= 1
        if d < 0:
            return


cdef class Matmul:
    """matmul (transpose_X, transpose_Y, alpha) and matmul_v2 (trans_x, trans_y)."""
    cdef bint tx, ty
    cdef double alpha
    cdef str name
    cdef object _out

    def __init__(self, str name, bint tx, bint ty, double alpha):
        self.name, self.tx, self.ty, self.alpha = name, tx, ty, alpha

    def __call__(self, x, y):
        cdef cnp.ndarray a = _readable(x)
        cdef cnp.ndarray b = _readable(y)
        cdef int t = typenum(a)
        if t != typenum(b) or (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64):
            raise TypeError(f"{self.name}: X and Y must both be float32 or float64, got "
                            f"{dtype_name(a)} and {dtype_name(b)}")
        cdef int nx = cnp.PyArray_NDIM(a), ny = cnp.PyArray_NDIM(b)
        if nx == 0 or ny == 0:
            raise ValueError(f"{self.name}: X{list(shape_of(a))} and Y{list(shape_of(b))} "
                             f"must have rank >= 1")
        cdef Mat mx, my
        cdef Py_ssize_t xr, xc, yr, yc, M, K, K2, N
        # Copy an operand only if BLAS cannot read its matrices in place.
        if not self._matrix(a, nx == 1, True, self.tx and nx > 1, &mx):
            a = contiguous(a)
            self._matrix(a, nx == 1, True, self.tx and nx > 1, &mx)
        if not self._matrix(b, ny == 1, False, self.ty and ny > 1, &my):
            b = contiguous(b)
            self._matrix(b, ny == 1, False, self.ty and ny > 1, &my)
        self._rows_cols(a, True, &xr, &xc)
        self._rows_cols(b, False, &yr, &yc)
        M, K = (xc, xr) if self.tx and nx > 1 else (xr, xc)
        K2, N = (yc, yr) if self.ty and ny > 1 else (yr, yc)
        if K != K2:
            raise ValueError(f"{self.name}: X{list(shape_of(a))} and Y{list(shape_of(b))} do "
                             f"not multiply: contraction dims {K} != {K2} (transposes "
                             f"{bool(self.tx)}, {bool(self.ty)})")
        if M > INT_MAX or N > INT_MAX or K > INT_MAX:
            raise ValueError(f"{self.name}: a matrix dimension exceeds the BLAS int range")
        # Batch dims: NumPy broadcasting, with byte strides (0 on broadcast dims).
        cdef int xb = nx - 2 if nx > 2 else 0, yb = ny - 2 if ny > 2 else 0
        cdef int nb = xb if xb > yb else yb, k
        cdef Py_ssize_t bdims[MAXDIM]
        cdef Py_ssize_t dx, dy, batch = 1
        shape = []
        for k in range(nb):
            dx = cnp.PyArray_DIMS(a)[k - nb + xb] if k >= nb - xb else 1
            dy = cnp.PyArray_DIMS(b)[k - nb + yb] if k >= nb - yb else 1
            if dx != dy and dx != 1 and dy != 1:
                raise ValueError(f"{self.name}: batch dims of X{list(shape_of(a))} and "
                                 f"Y{list(shape_of(b))} cannot be broadcast")
            bdims[k] = dy if dx == 1 else dx
            mx.bstride[k] = cnp.PyArray_STRIDES(a)[k - nb + xb] if dx != 1 else 0
            my.bstride[k] = cnp.PyArray_STRIDES(b)[k - nb + yb] if dy != 1 else 0
            batch *= bdims[k]
            shape.append(bdims[k])
        if nx > 1:
            shape.append(M)
        if ny > 1:
            shape.append(N)
        # vector . vector is 0-D (Paddle 3).
        cdef cnp.ndarray out = recycled(<PyObject*>self._out, tuple(shape), t)
        self._out = out
        if batch == 0 or M == 0 or N == 0:
            return (out,)
        if K == 0:
            out.fill(0)
            return (out,)
        cdef char* po = <char*>cnp.PyArray_DATA(out)
        cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(out)
        if self._foldable(a, &mx, my.bstride, nb, bdims, M, batch):
            # Y is one matrix and X's batches are stacked rows: one GEMM of batch*M rows.
            with nogil:
                gemm_rowmajor(t, False, my.trans, <int>(batch * M), <int>N, <int>K,
                              self.alpha, mx.data, mx.ld, my.data, my.ld, 0.0, po, <int>N)
            return (out,)
        with nogil:
            _batched(t, &mx, &my, po, M * N * item, nb, bdims, <int>M, <int>N, <int>K,
                     self.alpha)
        return (out,)

    cdef void _rows_cols(self, cnp.ndarray a, bint left, Py_ssize_t* r, Py_ssize_t* c):
        """Stored matrix dims; a 1-D X is a row [1, K], a 1-D Y a column [K, 1]."""
        cdef int n = cnp.PyArray_NDIM(a)
        cdef cnp.npy_intp* d = cnp.PyArray_DIMS(a)
        if n == 1 and left:
            r[0], c[0] = 1, d[0]
        elif n == 1:
            r[0], c[0] = d[0], 1
        else:
            r[0], c[0] = d[n - 2], d[n - 1]

    cdef bint _matrix(self, cnp.ndarray a, bint vec, bint left, bint trans, Mat* m):
        cdef int n = cnp.PyArray_NDIM(a)
        cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(a)
        cdef Py_ssize_t r, c, s0, s1, s
        self._rows_cols(a, left, &r, &c)
        if vec:
            # A row's row stride and a column's column stride are never used.
            s = cnp.PyArray_STRIDES(a)[0] // item
            s0, s1 = s, s
        else:
            s0 = cnp.PyArray_STRIDES(a)[n - 2] // item
            s1 = cnp.PyArray_STRIDES(a)[n - 1] // item
        m.data = <char*>cnp.PyArray_DATA(a)
        return _layout(r, c, s0, s1, trans, m)

    cdef bint _foldable(self, cnp.ndarray a, Mat* mx, Py_ssize_t* ystride, int nb,
                        Py_ssize_t* bdims, Py_ssize_t M, Py_ssize_t batch):
        cdef int k, n = cnp.PyArray_NDIM(a)
        cdef Py_ssize_t expect
        if nb == 0 or n < 2 or mx.trans or batch * M > INT_MAX:
            return False
        expect = M * mx.ld * cnp.PyArray_ITEMSIZE(a)
        for k in range(nb - 1, -1, -1):
            if ystride[k] != 0 or (bdims[k] > 1 and mx.bstride[k] != expect):
                return False
            expect *= bdims[k]
        # Rows within a matrix must be ld apart too (true unless M == 1 and ld was chosen).
        return M == 1 or cnp.PyArray_STRIDES(a)[n - 2] == mx.ld * cnp.PyArray_ITEMSIZE(a)


def _make_matmul(dict attrs, info=None):
    return Matmul("matmul", attrs["transpose_X"], attrs["transpose_Y"], attrs["alpha"])


def _make_matmul_v2(dict attrs, info=None):
    return Matmul("matmul_v2", attrs["trans_x"], attrs["trans_y"], 1.0)


# -- gradients --------------------------------------------------------------------------------
#
# With G = Out@GRAD and Out = alpha op(X) op(Y) per matrix, op(M) = M or M^T:
#   d op(X) = alpha G op(Y)^T,  d op(Y) = alpha op(X)^T G,
# so X@GRAD = alpha G op(Y)^T (or its transpose alpha op(Y) G^T when X was transposed), and
# likewise for Y. Each is one GEMM on the stored row-major matrices with the transposes passed
# to BLAS: nothing is copied or transposed in memory.


cdef int _float_operands(str name, cnp.ndarray a, cnp.ndarray b, cnp.ndarray g) except -1:
    cdef int t = typenum(a)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError(f"{name}: X has dtype {dtype_name(a)}, expected float32 or float64")
    if typenum(b) != t or typenum(g) != t:
        raise TypeError(f"{name}: X, Y and Out@GRAD must share one dtype, got "
                        f"{dtype_name(a)}, {dtype_name(b)} and {dtype_name(g)}")
    return t


cdef class MulGrad:
    """mul_grad: (X, Y, Out@GRAD) -> (X@GRAD, Y@GRAD) on the flattened views X [M, K],
    Y [K, N], G [M, N]: X@GRAD = G @ Y^T, Y@GRAD = X^T @ G, one GEMM each (BLAS reads Y and X
    transposed in place). An output nobody wants is not computed (None)."""
    cdef int xn, yn
    cdef bint want_x, want_y
    cdef object _dx, _dy

    def __init__(self, dict attrs, info=None):
        self.xn = attrs["x_num_col_dims"]
        self.yn = attrs["y_num_col_dims"]
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_y = info is None or info.wants("Y@GRAD")

    def __call__(self, x, y, dout):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef cnp.ndarray g = contiguous(dout)
        cdef int t = _float_operands("mul_grad", a, b, g)
        cdef tuple xs = shape_of(a), ys = shape_of(b)
        if not 0 < self.xn < len(xs) or not 0 < self.yn < len(ys):
            raise ValueError(f"mul_grad: x_num_col_dims={self.xn} / y_num_col_dims={self.yn} "
                             f"do not fit X{list(xs)} / Y{list(ys)}")
        cdef Py_ssize_t M = _prod(xs[:self.xn]), K = _prod(xs[self.xn:])
        cdef Py_ssize_t K2 = _prod(ys[:self.yn]), N = _prod(ys[self.yn:])
        if K != K2:
            raise ValueError(f"mul_grad: X{list(xs)} flattens to [{M}, {K}] but Y{list(ys)} "
                             f"flattens to [{K2}, {N}]")
        out_shape = xs[:self.xn] + ys[self.yn:]
        if shape_of(g) != out_shape:
            raise ValueError(f"mul_grad: Out@GRAD has shape {list(shape_of(g))}, expected "
                             f"Out's {list(out_shape)}")
        if M > INT_MAX or N > INT_MAX or K > INT_MAX:
            raise ValueError("mul_grad: a matrix dimension exceeds the BLAS int range")
        cdef cnp.ndarray dx = None, dy = None
        if self.want_x:
            dx = self._dx = recycled(<PyObject*>self._dx, xs, t)
        if self.want_y:
            dy = self._dy = recycled(<PyObject*>self._dy, ys, t)
        if M == 0 or N == 0 or K == 0:
            # An empty contraction (N for X@GRAD, M for Y@GRAD) sums nothing: zeros.
            for r in (dx, dy):
                if r is not None:
                    r.fill(0)
            return (dx, dy)
        cdef void* pa = cnp.PyArray_DATA(a)
        cdef void* pb = cnp.PyArray_DATA(b)
        cdef void* pg = cnp.PyArray_DATA(g)
        cdef void* px = cnp.PyArray_DATA(dx) if dx is not None else NULL
        cdef void* py = cnp.PyArray_DATA(dy) if dy is not None else NULL
        with nogil:
            if px != NULL:      # [M, K] = G [M, N] @ (Y [K, N])^T
                gemm_rowmajor(t, False, True, <int>M, <int>K, <int>N, 1.0, pg, <int>N,
                              pb, <int>N, 0.0, px, <int>K)
            if py != NULL:      # [K, N] = (X [M, K])^T @ G [M, N]
                gemm_rowmajor(t, True, False, <int>K, <int>N, <int>M, 1.0, pa, <int>K,
                              pg, <int>N, 0.0, py, <int>N)
        return (dx, dy)


cdef void _grad_batched(int t, bint for_x, bint tx, bint ty, char* pa, const Py_ssize_t* sa,
                        char* pb, const Py_ssize_t* sb, char* pg, Py_ssize_t g_bytes,
                        char* pc, const Py_ssize_t* sc, int nb, const Py_ssize_t* bdims,
                        int M, int N, int K, int xc, int yc, double alpha,
                        double beta) noexcept nogil:
    """X@GRAD (for_x) or Y@GRAD, one GEMM per output batch entry (odometer over the batch
    dims). sa/sb/sc: byte strides of X, Y and the gradient over the batch dims (0 where
    broadcast); beta 1 accumulates the entries that share a broadcast gradient matrix."""
    cdef Py_ssize_t idx[MAXDIM]
    cdef Py_ssize_t oa = 0, ob = 0, oc = 0, og = 0
    cdef int d
    for d in range(nb):
        idx[d] = 0
    while True:
        if for_x and not tx:    # [M, K] = G [M, N] @ op(Y)^T
            gemm_rowmajor(t, False, not ty, M, K, N, alpha, pg + og, N, pb + ob, yc, beta,
                          pc + oc, K)
        elif for_x:             # [K, M] = op(Y) [K, N] @ G^T
            gemm_rowmajor(t, ty, True, K, M, N, alpha, pb + ob, yc, pg + og, N, beta,
                          pc + oc, M)
        elif not ty:            # [K, N] = op(X)^T [K, M] @ G [M, N]
            gemm_rowmajor(t, not tx, False, K, N, M, alpha, pa + oa, xc, pg + og, N, beta,
                          pc + oc, N)
        else:                   # [N, K] = G^T [N, M] @ op(X) [M, K]
            gemm_rowmajor(t, True, tx, N, K, M, alpha, pg + og, N, pa + oa, xc, beta,
                          pc + oc, K)
        og += g_bytes
        d = nb - 1
        while d >= 0:
            idx[d] += 1
            oa += sa[d]
            ob += sb[d]
            oc += sc[d]
            if idx[d] < bdims[d]:
                break
            oa -= sa[d] * bdims[d]
            ob -= sb[d] * bdims[d]
            oc -= sc[d] * bdims[d]
            idx[d] = 0
            d -= 1
        if d < 0:
            return


cdef class MatmulGrad:
    """matmul_grad / matmul_v2_grad: (X, Y, Out@GRAD) -> (X@GRAD, Y@GRAD).

    Per output batch entry, X@GRAD = alpha G op(Y)^T (transposed back if X was) and Y@GRAD =
    alpha op(X)^T G (likewise); an operand broadcast along batch dims gets the sum over them
    (GEMMs accumulating with beta = 1). When Y is one matrix and X's batches are stacked
    rows (the usual [B, M, K] @ [K, N]), each gradient is a single GEMM over all B*M rows,
    the batch sum of Y@GRAD folding into the contraction."""
    cdef bint tx, ty, want_x, want_y
    cdef double alpha
    cdef str name
    cdef object _dx, _dy

    def __init__(self, str name, bint tx, bint ty, double alpha, info=None):
        self.name, self.tx, self.ty, self.alpha = name, tx, ty, alpha
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_y = info is None or info.wants("Y@GRAD")

    def __call__(self, x, y, dout):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef cnp.ndarray g = contiguous(dout)
        cdef int t = _float_operands(self.name, a, b, g)
        cdef int nx = cnp.PyArray_NDIM(a), ny = cnp.PyArray_NDIM(b)
        if nx == 0 or ny == 0:
            raise ValueError(f"{self.name}: X{list(shape_of(a))} and Y{list(shape_of(b))} "
                             f"must have rank >= 1")
        cdef cnp.npy_intp* xd = cnp.PyArray_DIMS(a)
        cdef cnp.npy_intp* yd = cnp.PyArray_DIMS(b)
        # Stored matrices: a 1-D X is a row [1, K], a 1-D Y a column [K, 1]; their
        # transpose flags mean nothing and are dropped.
        cdef Py_ssize_t xr = 1 if nx == 1 else xd[nx - 2], xc = xd[nx - 1]
        cdef Py_ssize_t yr = yd[0] if ny == 1 else yd[ny - 2], yc = 1 if ny == 1 else yd[ny - 1]
        cdef bint tx = self.tx and nx > 1, ty = self.ty and ny > 1
        cdef Py_ssize_t M, K, K2, N
        M, K = (xc, xr) if tx else (xr, xc)
        K2, N = (yc, yr) if ty else (yr, yc)
        if K != K2:
            raise ValueError(f"{self.name}: X{list(shape_of(a))} and Y{list(shape_of(b))} do "
                             f"not multiply: contraction dims {K} != {K2} (transposes "
                             f"{bool(self.tx)}, {bool(self.ty)})")
        if M > INT_MAX or N > INT_MAX or K > INT_MAX:
            raise ValueError(f"{self.name}: a matrix dimension exceeds the BLAS int range")
        cdef int xb = nx - 2 if nx > 2 else 0, yb = ny - 2 if ny > 2 else 0
        cdef int nb = xb if xb > yb else yb, k
        cdef Py_ssize_t bdims[MAXDIM]
        cdef Py_ssize_t sa[MAXDIM]
        cdef Py_ssize_t sb[MAXDIM]
        cdef Py_ssize_t dx_, dy_, batch = 1
        cdef bint x_bcast = False, y_bcast = False, y_single = True
        shape = []
        for k in range(nb):
            dx_ = xd[k - nb + xb] if k >= nb - xb else 1
            dy_ = yd[k - nb + yb] if k >= nb - yb else 1
            if dx_ != dy_ and dx_ != 1 and dy_ != 1:
                raise ValueError(f"{self.name}: batch dims of X{list(shape_of(a))} and "
                                 f"Y{list(shape_of(b))} cannot be broadcast")
            bdims[k] = dy_ if dx_ == 1 else dx_
            sa[k] = cnp.PyArray_STRIDES(a)[k - nb + xb] if dx_ != 1 else 0
            sb[k] = cnp.PyArray_STRIDES(b)[k - nb + yb] if dy_ != 1 else 0
            x_bcast |= dx_ == 1 and bdims[k] > 1
            y_bcast |= dy_ == 1 and bdims[k] > 1
            y_single &= dy_ == 1
            batch *= bdims[k]
            shape.append(bdims[k])
        if nx > 1:
            shape.append(M)
        if ny > 1:
            shape.append(N)
        out_shape = tuple(shape)
        # A 0-D Out's gradient may come as one element of another rank ([1] in Fluid).
        if shape_of(g) != out_shape and not (not shape and cnp.PyArray_SIZE(g) == 1):
            raise ValueError(f"{self.name}: Out@GRAD has shape {list(shape_of(g))}, expected "
                             f"Out's {list(out_shape)}")
        # Stacked rows: Y one matrix, X untransposed with a batch entry of its own for every
        # output one (contiguous, so its matrices are consecutive [M, K] blocks).
        cdef bint fold = nb > 0 and y_single and not tx and not x_bcast and \
            batch * M <= INT_MAX
        cdef int R = <int>(batch * M)
        # Gradients summed over broadcast batch entries accumulate into zeros.
        cdef bint acc_y = y_bcast and not fold
        cdef cnp.ndarray dx = None, dy = None
        if self.want_x:
            dx = self._dx = recycled(<PyObject*>self._dx, shape_of(a), t)
            if x_bcast:
                dx.fill(0)
        if self.want_y:
            dy = self._dy = recycled(<PyObject*>self._dy, shape_of(b), t)
            if acc_y:
                dy.fill(0)
        if batch == 0 or M == 0 or N == 0 or K == 0:
            for r in (dx, dy):
                if r is not None:
                    r.fill(0)
            return (dx, dy)
        cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(a)
        cdef char* pa = <char*>cnp.PyArray_DATA(a)
        cdef char* pb = <char*>cnp.PyArray_DATA(b)
        cdef char* pg = <char*>cnp.PyArray_DATA(g)
        cdef double alpha = self.alpha
        if dx is not None:
            if fold:
                with nogil:
                    gemm_rowmajor(t, False, not ty, R, <int>K, <int>N, alpha, pg, <int>N,
                                  pb, <int>yc, 0.0, cnp.PyArray_DATA(dx), <int>K)
            else:
                with nogil:
                    _grad_batched(t, True, tx, ty, pa, sa, pb, sb, pg, M * N * item,
                                  <char*>cnp.PyArray_DATA(dx), sa, nb, bdims, <int>M, <int>N,
                                  <int>K, <int>xc, <int>yc, alpha, 1.0 if x_bcast else 0.0)
        if dy is not None:
            if fold and not ty:     # [K, N] = X_rows^T [K, B*M] @ G_rows [B*M, N]
                with nogil:
                    gemm_rowmajor(t, True, False, <int>K, <int>N, R, alpha, pa, <int>xc, pg,
                                  <int>N, 0.0, cnp.PyArray_DATA(dy), <int>N)
            elif fold:              # [N, K] = G_rows^T [N, B*M] @ X_rows [B*M, K]
                with nogil:
                    gemm_rowmajor(t, True, False, <int>N, <int>K, R, alpha, pg, <int>N, pa,
                                  <int>xc, 0.0, cnp.PyArray_DATA(dy), <int>K)
            else:
                with nogil:
                    _grad_batched(t, False, tx, ty, pa, sa, pb, sb, pg, M * N * item,
                                  <char*>cnp.PyArray_DATA(dy), sb, nb, bdims, <int>M, <int>N,
                                  <int>K, <int>xc, <int>yc, alpha, 1.0 if acc_y else 0.0)
        return (dx, dy)


def _make_matmul_grad(dict attrs, info=None):
    return MatmulGrad("matmul_grad", attrs["transpose_X"], attrs["transpose_Y"],
                      attrs["alpha"], info)


def _make_matmul_v2_grad(dict attrs, info=None):
    return MatmulGrad("matmul_v2_grad", attrs["trans_x"], attrs["trans_y"], 1.0, info)


KERNELS = [("mul", Mul, DTYPES), ("matmul", _make_matmul, DTYPES),
           ("matmul_v2", _make_matmul_v2, DTYPES), ("mul_grad", MulGrad, DTYPES),
           ("matmul_grad", _make_matmul_grad, DTYPES),
           ("matmul_v2_grad", _make_matmul_v2_grad, DTYPES)]
