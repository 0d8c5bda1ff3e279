# The recurrent kernels' float32 GEMM (the core's packed GEMM, under the names these kernels
# use; hr_rnn_gemm_ok() is 0 where the CPU lacks AVX-512: callers use BLAS then) and the LSTM
# cells of one step, forward and backward, in C (_rnn_gemm.h).
cimport numpy as cnp

cdef extern from "headrace/kernels/packed_gemm.h" nogil:
    int hr_rnn_gemm_ok "hr_pgemm_ok"()
    size_t hr_rnn_packed_size "hr_pgemm_packed_size"(int k, int n)
    void hr_rnn_pack "hr_pgemm_pack"(const float* src, Py_ssize_t ldb, int trans, int k, int n,
                                     float* dst)
    void hr_rnn_gemm "hr_pgemm"(int m, int n, int k, const float* a, Py_ssize_t a_rs,
                                Py_ssize_t a_ks, const float* bp, float* c, Py_ssize_t ldc,
                                int accumulate)
    void hr_rnn_gemm_b "hr_pgemm_b"(int m, int n, int k, const float* a, Py_ssize_t a_rs,
                                    Py_ssize_t a_ks, const float* b, Py_ssize_t ldb, float* c,
                                    Py_ssize_t ldc, int accumulate)

cdef extern from "_rnn_gemm.h" nogil:
    void hr_lstm_cells(Py_ssize_t n, int d, const float* x, const cnp.int64_t* idx,
                       const float* bias, const float* peep, int product, const float* pc,
                       float* g, float* c, float* h, float* hidden, float* cell)
    void hr_lstm_cells_grad(Py_ssize_t n, int d, const float* g, const float* c,
                            const float* pc, const cnp.int64_t* idx, const float* dhid,
                            const float* dcell, const float* dh, float* dc, float* e,
                            Py_ssize_t lde, float* dx, float* db, const float* peep,
                            float* dpeep)
    void hr_rnn_lstm_row(int H, float* row, const float* bias, const float* cp,
                         float* out)
    void hr_rnn_lstm_row_grad(int H, const float* row, const float* cp, const float* dh,
                              const float* dout, float* dc, float* ex, float* dhp, float* db)
