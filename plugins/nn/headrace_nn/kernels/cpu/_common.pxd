# Helpers of this plugin's CPU kernels; the ones every plugin shares are in
# headrace/kernels/common.pxd (cimported from the core).
cimport numpy as cnp
from libc.math cimport exp, expf, tanh, tanhf
from headrace.kernels.blas_split cimport blas_gemm
from headrace.kernels.common cimport contiguous, real, shape_of
from headrace.kernels.fastmath cimport hr_f32_sigmoid, hr_f32_tanh
from headrace.kernels.packed_gemm cimport (hr_pgemm_b_mt, hr_pgemm_mt, hr_pgemm_ok,
                                           hr_pgemm_pack, hr_pgemm_packed_size)
from headrace.kernels.threads cimport GEMM_GRAIN, threads_for
from libc.stdlib cimport free, malloc


cdef inline cnp.ndarray float_array(object v, str op, str slot):
    """``v`` as a C-contiguous float32/float64 ndarray, or a TypeError naming op and slot."""
    if v is None:
        raise TypeError(f"{op}: input {slot} is missing")
    cdef cnp.ndarray a = contiguous(v)
    cdef int t = cnp.PyArray_TYPE(a)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError(f"{op}: {slot} has dtype {a.dtype}, expected float32 or float64")
    return a


cdef inline int same_float(cnp.ndarray a, cnp.ndarray b, str op, str aslot,
                           str bslot) except -1:
    """TypeError unless ``a`` and ``b`` have the same dtype."""
    if cnp.PyArray_TYPE(a) != cnp.PyArray_TYPE(b):
        raise TypeError(f"{op}: {bslot} has dtype {b.dtype} but {aslot} is {a.dtype}")
    return 0


cdef inline int expect_shape(cnp.ndarray a, tuple want, str op, str slot,
                             str what) except -1:
    """ValueError unless ``a`` has shape ``want``."""
    got = shape_of(a)
    if got != want:
        raise ValueError(f"{op}: {slot}{list(got)} must have {what} {list(want)}")
    return 0


cdef inline void fast_gemm(bint ta, bint tb, int M, int N, int K, const real* A, int lda,
                           const real* B, int ldb, real beta, real* C, int ldc) noexcept nogil:
    """:func:`gemm`, on the core's packed AVX-512 GEMM for float32 products of 64K+
    multiply-adds where the CPU has AVX-512 (up to 1.7x OpenBLAS here), split over
    hr.set_num_threads' threads from GEMM_GRAIN multiply-adds a thread; else BLAS."""
    cdef Py_ssize_t a_rs = 1 if ta else lda, a_ks = lda if ta else 1
    cdef float* bp
    cdef int nt
    if real is float:
        if K > 0 and (beta == 0 or beta == 1) and <Py_ssize_t>M * N * K >= 65536 and \
                hr_pgemm_ok():
            nt = threads_for(<double>M * N * K, GEMM_GRAIN)
            if not tb:
                hr_pgemm_b_mt(M, N, K, A, a_rs, a_ks, B, ldb, C, ldc, beta == 1, nt)
                return
            bp = <float*>malloc(hr_pgemm_packed_size(K, N) * sizeof(float))
            if bp != NULL:
                hr_pgemm_pack(B, ldb, 1, K, N, bp)
                hr_pgemm_mt(M, N, K, A, a_rs, a_ks, bp, C, ldc, beta == 1, nt)
                free(bp)
                return
    gemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc)


cdef inline void gemm(bint ta, bint tb, int M, int N, int K, const real* A, int lda,
                      const real* B, int ldb, real beta, real* C, int ldc) noexcept nogil:
    """Row-major C[M, N] = op(A) @ op(B) + beta * C through BLAS; op(A) = A^T when ``ta`` (A
    stored [K, M]), op(B) = B^T when ``tb`` (B stored [N, K]). Split over hr.set_num_threads'
    threads (the core's blas_split.pxd)."""
    blas_gemm(ta, tb, M, N, K, <real>1, A, lda, B, ldb, beta, C, ldc)


# The recurrent kernels' activations, by code: 0 sigmoid, 1 tanh, 2 relu, 3 identity.
cdef inline real act(int a, real x) noexcept nogil:
    # float32 in single precision (expf/tanhf): twice as fast, and float32's own accuracy.
    if a == 0:
        if real is float:
            return 1 / (1 + expf(-x))
        return 1 / (1 + exp(-x))
    if a == 1:
        if real is float:
            return tanhf(x)
        return tanh(x)
    if a == 2:
        return x if x > 0 else 0
    return x


cdef inline void act_rows(int a, real* x, Py_ssize_t n) noexcept nogil:
    """Activation ``a`` over ``n`` contiguous values, in place. float32's sigmoid and tanh go
    through the core's vectorized loops (fastmath.h, one clone per vector width): the
    recurrent kernels' gates are mostly these transcendentals."""
    cdef Py_ssize_t i
    if real is float:
        if a == 0:
            hr_f32_sigmoid(x, x, n)
            return
        if a == 1:
            hr_f32_tanh(x, x, n)
            return
    if a == 3:
        return
    for i in range(n):
        x[i] = act(a, x[i])


cdef inline real dact(int a, real y) noexcept nogil:
    """The activation's derivative, from its output ``y``."""
    if a == 0:
        return y * (1 - y)
    if a == 1:
        return 1 - y * y
    if a == 2:
        return 1 if y > 0 else 0
    return 1


cdef inline int mm(cnp.ndarray a, cnp.ndarray b, cnp.ndarray c, bint ta, bint tb,
                   double beta) except -1:
    """``c = op(a) @ op(b) + beta * c`` on 2-D arrays whose rows are contiguous (``c`` may be
    a column block of a wider array: its leading dimension comes from its strides), through
    BLAS. ``ta``/``tb``: a / b transposed."""
    cdef int isz = a.itemsize
    cdef int m = c.shape[0], n = c.shape[1]
    cdef int k = a.shape[0] if ta else a.shape[1]
    cdef int lda = a.strides[0] // isz, ldb = b.strides[0] // isz, ldc = c.strides[0] // isz
    if m == 0 or n == 0:
        return 0
    if k == 0:
        if beta == 0:
            c[...] = 0
        return 0
    if a.dtype.num == cnp.NPY_FLOAT32:
        with nogil:
            gemm[float](ta, tb, m, n, k, <float*>cnp.PyArray_DATA(a), lda,
                        <float*>cnp.PyArray_DATA(b), ldb, <float>beta,
                        <float*>cnp.PyArray_DATA(c), ldc)
    else:
        with nogil:
            gemm[double](ta, tb, m, n, k, <double*>cnp.PyArray_DATA(a), lda,
                         <double*>cnp.PyArray_DATA(b), ldb, beta,
                         <double*>cnp.PyArray_DATA(c), ldc)
    return 0
