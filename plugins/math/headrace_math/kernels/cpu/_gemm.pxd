# The row-major GEMM of _gemm.pyx (packed AVX-512 GEMM for large float32 products, else
# sgemm/dgemm from scipy.linalg.cython_blas), shared with fc.pyx so both take the same path.
cdef void gemm_rowmajor(int typenum, bint trans_a, bint trans_b, int M, int N, int K,
                        double alpha, void* A, int lda, void* B, int ldb, double beta,
                        void* C, int ldc) noexcept nogil
# fc's float32 product with its bias and relu applied as C is stored; False where the path is
# not taken (the caller falls back to gemm_rowmajor plus its own pass over C).
cdef bint gemm_bias_act(int M, int N, int K, const float* A, const float* B,
                        const float* bias, bint relu, float* C) noexcept nogil
