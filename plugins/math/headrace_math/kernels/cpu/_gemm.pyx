# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The row-major GEMM every product of this plugin takes (mul, matmul, fc): the core's AVX-512
GEMM for float32 products (B read in place where hr_dgemm_pays, direct_gemm.h;
packed block by block above, packed_gemm.h), split over the threads of ``hr.set_num_threads``,
else sgemm/dgemm from scipy.linalg.cython_blas, split over the same threads (blas_split.pxd).
"""
cimport numpy as cnp
from libc.stdlib cimport free, malloc
from headrace.kernels.blas_split cimport blas_gemm
from headrace.kernels.direct_gemm cimport hr_dgemm_mt, hr_dgemm_pays
from headrace.kernels.packed_gemm cimport (hr_pgemm_b_mt, hr_pgemm_mt, hr_pgemm_ok,
                                           hr_pgemm_pack_t, hr_pgemm_packed_size)
from headrace.kernels.threads cimport GEMM_GRAIN, threads_for


# float32 products big enough to amortize packing take the core's packed AVX-512 GEMM where the
# CPU has it (up to 1.7x OpenBLAS here, which repacks both operands per call); else BLAS. It is
# split over threads from GEMM_GRAIN multiply-adds a thread.
cdef bint _packed = hr_pgemm_ok()
cdef Py_ssize_t PACKED_MIN_FLOPS = 1 << 16


def use_packed_gemm(flag=None):
    """Set (``flag``) whether float32 products may use the packed GEMM; returns the old value."""
    global _packed
    old = _packed
    if flag is not None:
        _packed = bool(flag) and hr_pgemm_ok()
    return old


cdef bint _packed_gemm(bint trans_a, bint trans_b, int M, int N, int K, double alpha,
                       const float* A, int lda, const float* B, int ldb, double beta,
                       float* C, int ldc) noexcept nogil:
    cdef Py_ssize_t a_rs = 1 if trans_a else lda, a_ks = lda if trans_a else 1
    cdef float* bp
    cdef Py_ssize_t i, i0, i1, j
    cdef int nt = threads_for(<double>M * N * K, GEMM_GRAIN)
    if not _packed or alpha != 1.0 or (beta != 0.0 and beta != 1.0) or K <= 0 or \
            <Py_ssize_t>M * N * K < PACKED_MIN_FLOPS:
        return False
    if not trans_b and trans_a and beta == 0.0 and ldb < lda and lda >= 1024:
        # A^T B (a weight's gradient X^T G) steps through A's rows lda apart, a page or more
        # for a wide X (FFN's [rows, 1024]: 15-25% slower, no prefetch across pages; below a
        # page the transpose back costs more: the MLP step, X [128, 784], 1.63 -> 1.73 ms). Then
        # C^T = G^T X reads the narrower G transposed instead (the same sums in the same
        # order), and C is its blocked transpose.
        bp = <float*>malloc(<size_t>M * N * sizeof(float))
        if bp != NULL:
            hr_pgemm_b_mt(N, M, K, B, 1, ldb, A, lda, bp, M, 0, nt)
            for i0 in range(0, M, 32):
                i1 = i0 + 32 if i0 + 32 < M else M
                for j in range(N):
                    for i in range(i0, i1):
                        C[i * ldc + j] = bp[j * M + i]
            free(bp)
            return True
    if not trans_b and hr_dgemm_pays(M, K):
        # a layer's product at batch <= 512 (or a weight's gradient X^T G, K the batch, at
        # most 512 inputs): B read where it lies, unpacked (direct_gemm.h)
        hr_dgemm_mt(M, N, K, A, a_rs, a_ks, B, ldb, C, ldc, beta == 1.0, NULL, 0, nt)
        return True
    if not trans_b:   # B as it lies: packed block by block inside
        hr_pgemm_b_mt(M, N, K, A, a_rs, a_ks, B, ldb, C, ldc, beta == 1.0, nt)
        return True
    bp = <float*>malloc(hr_pgemm_packed_size(K, N) * sizeof(float))
    if bp == NULL:
        return False
    hr_pgemm_pack_t(B, ldb, K, N, bp)   # op(B)[l, j] = B[j * ldb + l]
    hr_pgemm_mt(M, N, K, A, a_rs, a_ks, bp, C, ldc, beta == 1.0, nt)
    free(bp)
    return True


cdef void gemm_rowmajor(int typenum, bint trans_a, bint trans_b, int M, int N, int K,
                        double alpha, void* A, int lda, void* B, int ldb, double beta,
                        void* C, int ldc) noexcept nogil:
    """C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C, all row-major."""
    if typenum == cnp.NPY_FLOAT32 and _packed_gemm(trans_a, trans_b, M, N, K, alpha,
                                                   <const float*>A, lda, <const float*>B, ldb,
                                                   beta, <float*>C, ldc):
        return
    if typenum == cnp.NPY_FLOAT32:
        blas_gemm[float](trans_a, trans_b, M, N, K, <float>alpha, <const float*>A, lda,
                         <const float*>B, ldb, <float>beta, <float*>C, ldc)
    else:
        blas_gemm[double](trans_a, trans_b, M, N, K, alpha, <const double*>A, lda,
                          <const double*>B, ldb, beta, <double*>C, ldc)


cdef bint gemm_bias_act(int M, int N, int K, const float* A, const float* B,
                        const float* bias, bint relu, float* C) noexcept nogil:
    """C[M, N] = act(A[M, K] @ B[K, N] + bias) (bias NULL: none; act relu or identity),
    row-major and contiguous, bias and relu applied as C is stored (direct_gemm.h). False
    (nothing written) where that path is not taken: no AVX-512, the packed GEMM switched off,
    or a product where packing pays (not hr_dgemm_pays: more than 512 rows or K over 1024);
    the caller then runs gemm_rowmajor and its own epilogue."""
    if not _packed or not hr_dgemm_pays(M, K):
        return False
    hr_dgemm_mt(M, N, K, A, K, 1, B, N, C, N, 0, bias, relu,
                threads_for(<double>M * N * K, GEMM_GRAIN))
    return True
