# The row-major GEMM of _gemm.pyx (packed AVX-512 GEMM for large float32 products, else
# sgemm/dgemm from scipy.linalg.cython_blas), shared with fc.pyx so both take the same path.
cdef void gemm_rowmajor(int typenum, bint trans_a, bint trans_b, int M, int N, int K,
                        double alpha, void* A, int lda, void* B, int ldb, double beta,
                        void* C, int ldc) noexcept nogil
