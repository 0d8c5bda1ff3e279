# The core's float32 GEMM with B packed in panels (AVX-512; why, in packed_gemm.h), for every
# plugin's kernels. hr_pgemm_ok() is 0 where the CPU lacks AVX-512: callers use BLAS then.
# A plugin's build puts the directory holding the `headrace` package on its C include path.
cdef extern from "headrace/kernels/packed_gemm.h" nogil:
    int hr_pgemm_ok()
    size_t hr_pgemm_packed_size(int k, int n)
    void hr_pgemm_pack(const float* src, Py_ssize_t ldb, int trans, int k, int n, float* dst)
    # hr_pgemm_pack(src, ldb, 1, k, n, dst), in 16 x 16 blocks transposed in registers
    void hr_pgemm_pack_t(const float* src, Py_ssize_t ldb, int k, int n, float* dst)
    void hr_pgemm(int m, int n, int k, const float* a, Py_ssize_t a_rs, Py_ssize_t a_ks,
                  const float* bp, float* c, Py_ssize_t ldc, int accumulate)
    void hr_pgemm_b(int m, int n, int k, const float* a, Py_ssize_t a_rs, Py_ssize_t a_ks,
                    const float* b, Py_ssize_t ldb, float* c, Py_ssize_t ldc, int accumulate)
    # The same on nthreads threads (OpenMP; threads_for() of headrace.kernels.threads says how
    # many): C is split into whole panels or 12-row bands, so the result is the serial one.
    void hr_pgemm_mt(int m, int n, int k, const float* a, Py_ssize_t a_rs, Py_ssize_t a_ks,
                     const float* bp, float* c, Py_ssize_t ldc, int accumulate, int nthreads)
    void hr_pgemm_b_mt(int m, int n, int k, const float* a, Py_ssize_t a_rs, Py_ssize_t a_ks,
                       const float* b, Py_ssize_t ldb, float* c, Py_ssize_t ldc, int accumulate,
                       int nthreads)
