# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""mul: X flattened to 2-D at x_num_col_dims times Y flattened at y_num_col_dims, through BLAS.

Row-major C = A @ B is computed as the column-major product C^T = B^T A^T, so the arrays are
passed to sgemm/dgemm without any copy or transpose.
"""
cimport numpy as cnp
from scipy.linalg.cython_blas cimport dgemm, sgemm
from ._common cimport contiguous, empty, shape_of

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
        cdef int t = cnp.PyArray_TYPE(a)
        if t != cnp.PyArray_TYPE(b) or (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64):
            raise TypeError(f"mul: X and Y must both be float32 or float64, got "
                            f"{a.dtype} and {b.dtype}")
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


KERNELS = [("mul", Mul, DTYPES)]
