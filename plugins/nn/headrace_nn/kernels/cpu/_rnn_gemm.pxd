# The recurrent kernels' float32 GEMM against a weight packed once per call (AVX-512; why, in
# _rnn_gemm.h). hr_rnn_gemm_ok() is 0 where the CPU lacks AVX-512: callers use BLAS then.
cdef extern from "_rnn_gemm.h" nogil:
    int hr_rnn_gemm_ok()
    size_t hr_rnn_packed_size(int k, int n)
    void hr_rnn_pack(const float* src, Py_ssize_t ldb, int trans, int k, int n, float* dst)
    void hr_rnn_gemm(int m, int n, int k, const float* a, Py_ssize_t a_rs, Py_ssize_t a_ks,
                     const float* bp, float* c, Py_ssize_t ldc, int accumulate)
    void hr_rnn_gemm_b(int m, int n, int k, const float* a, Py_ssize_t a_rs, Py_ssize_t a_ks,
                       const float* b, Py_ssize_t ldb, float* c, Py_ssize_t ldc, int accumulate)
    void hr_lstm_cell_grad(Py_ssize_t n, int d, const float* g, const float* c, const float* a,
                           const float* pc, const float* dh, float* dc, float* e,
                           const float* peep, float* dpeep)
