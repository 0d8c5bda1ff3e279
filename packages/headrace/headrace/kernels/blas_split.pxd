# BLAS products split over headrace's OpenMP threads (hr.set_num_threads): C's rows, or its
# columns when it has few rows, in bands, one single-threaded sgemm/dgemm call a band.
# SciPy's OpenBLAS runs a pthread pool of its own whose threads spin after each call; beside
# OpenMP's threads (which spin too) two pools would ask for the same cores. So headrace keeps
# that BLAS at one thread (headrace.runtime.threads.bind_blas) and drives it from one pool, its
# own. Inline: compiled into each kernel module that cimports it.
from cython.parallel cimport prange
from scipy.linalg.cython_blas cimport dgemm, sgemm
from headrace.kernels.common cimport real
from headrace.kernels.threads cimport GEMM_GRAIN, threads_for


cdef inline void _blas(bint ta, bint tb, int M, int N, int K, real alpha, const real* A,
                       int lda, const real* B, int ldb, real beta, real* C,
                       int ldc) noexcept nogil:
    # Row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T: no copies.
    cdef char ca = b'T' if ta else b'N'
    cdef char cb = b'T' if tb else b'N'
    if real is float:
        sgemm(&cb, &ca, &N, &M, &K, &alpha, <float*>B, &ldb, <float*>A, &lda, &beta, C, &ldc)
    else:
        dgemm(&cb, &ca, &N, &M, &K, &alpha, <double*>B, &ldb, <double*>A, &lda, &beta, C, &ldc)


cdef inline void blas_gemm(bint ta, bint tb, int M, int N, int K, real alpha, const real* A,
                           int lda, const real* B, int ldb, real beta, real* C,
                           int ldc) noexcept nogil:
    """Row-major C[M, N] = alpha op(A) op(B) + beta C (op(A) = A^T, stored [K, M], when ta;
    op(B) = B^T, stored [N, K], when tb) through BLAS, on threads_for(M N K, GEMM_GRAIN)
    threads: bands of whole rows of C (of whole columns when M is the smaller side)."""
    cdef int t, nt = threads_for(<double>M * N * K, GEMM_GRAIN)
    cdef int i0, i1
    cdef bint rows = M >= N
    if rows and nt > M // 8:
        nt = M // 8 if M >= 16 else 1
    elif not rows and nt > N // 16:
        nt = N // 16 if N >= 32 else 1
    if nt <= 1:
        _blas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        if rows:
            i0 = <int>(<long>M * t // nt)
            i1 = <int>(<long>M * (t + 1) // nt)
            _blas(ta, tb, i1 - i0, N, K, alpha, A + (i0 if ta else <Py_ssize_t>i0 * lda),
                  lda, B, ldb, beta, C + <Py_ssize_t>i0 * ldc, ldc)
        else:   # bands of 16 columns (a float32 cache line)
            i0 = <int>((<long>N * t // nt) & ~15)
            i1 = N if t == nt - 1 else <int>((<long>N * (t + 1) // nt) & ~15)
            _blas(ta, tb, M, i1 - i0, K, alpha, A, lda,
                  B + (<Py_ssize_t>i0 * ldb if tb else i0), ldb, beta, C + i0, ldc)
