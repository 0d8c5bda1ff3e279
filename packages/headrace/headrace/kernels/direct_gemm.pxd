# The core's float32 GEMM with B read in place, no packing, and an optional bias + relu fused
# into the store (why and where it pays, in direct_gemm.h). Call it only where hr_pgemm_ok()
# (packed_gemm.pxd) is 1. A plugin's build puts the directory holding the `headrace` package
# on its C include path.
cdef extern from "headrace/kernels/direct_gemm.h" nogil:
    int hr_dgemm_pays(int m, int k)   # up to 512 rows of C, k up to 1024
    # C[m, n] = act(A B (+ C when accumulate) + bias); bias NULL or n floats, relu 0 or 1; on
    # nthreads threads, the result the serial one.
    void hr_dgemm_mt(int m, int n, int k, const float* a, Py_ssize_t a_rs, Py_ssize_t a_ks,
                     const float* b, Py_ssize_t ldb, float* c, Py_ssize_t ldc, int accumulate,
                     const float* bias, int relu, int nthreads)
