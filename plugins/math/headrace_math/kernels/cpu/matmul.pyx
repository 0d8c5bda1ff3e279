# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Matrix products through BLAS: mul (X flattened to 2-D at x_num_col_dims times Y flattened at
y_num_col_dims) and matmul / matmul_v2 (NumPy matmul: transposes, 1-D operands, broadcast
batch dims).

Row-major C = A @ B is computed as the column-major product C^T = B^T A^T, so the arrays are
passed to sgemm/dgemm without any copy or transpose. matmul reads each operand's matrices in
place whenever BLAS can (rows or columns contiguous, any leading dimension, any batch strides,
a column-major matrix being a transposed row-major one) and copies only an operand it cannot.
"""
cimport numpy as cnp
from scipy.linalg.cython_blas cimport dgemm, sgemm
from ._common cimport _normalized, behaved, contiguous, dtype_name, empty, shape_of, typenum

import numpy as np

cnp.import_array()

DTYPES = ("float32", "float64")
cdef Py_ssize_t INT_MAX = 2147483647


cdef Py_ssize_t _prod(tuple dims):
    cdef Py_ssize_t n = 1
    for d in dims:
        n *= <Py_ssize_t>d
    return n


cdef void gemm_rowmajor(int typenum, bint trans_a, bint trans_b, int M, int N, int K,
                        double alpha, void* A, int lda, void* B, int ldb, double beta,
                        void* C, int ldc) noexcept nogil:
    """C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C, all row-major."""
    cdef char ta = b'T' if trans_b else b'N'
    cdef char tb = b'T' if trans_a else b'N'
    cdef float fa = <float>alpha, fb = <float>beta
    if typenum == cnp.NPY_FLOAT32:
        sgemm(&ta, &tb, &N, &M, &K, &fa, <float*>B, &ldb, <float*>A, &lda, &fb,
              <float*>C, &ldc)
    else:
        dgemm(&ta, &tb, &N, &M, &K, &alpha, <double*>B, &ldb, <double*>A, &lda, &beta,
              <double*>C, &ldc)


cdef class Mul:
    cdef int xn, yn

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
        cdef cnp.ndarray out = empty(xs[:self.xn] + ys[self.yn:], t)
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
        cdef cnp.ndarray out = empty(tuple(shape) if shape else (1,), t)
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


KERNELS = [("mul", Mul, DTYPES), ("matmul", _make_matmul, DTYPES),
           ("matmul_v2", _make_matmul_v2, DTYPES)]
