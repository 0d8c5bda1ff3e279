"""fc: Out = act(Input @ W + Bias).

float32 where the CPU has AVX-512 and the product is a layer's (up to 512 rows, K up to 1024:
_gemm.pxd's gemm_bias_act, the core's direct_gemm.h): one GEMM that reads W where it lies,
with no packing, and adds the bias and applies relu as it stores each tile of Out, so Out is
written once. Packing W took 6-7% of [64, 784] x [784, 256] and the separate pass over Out
1-2%. Read in place, W runs as fast as a copy packed once ahead (223 vs 224 us there, as ONNX
Runtime prepacks its constant weights), so no packed copy is cached: none can go stale when
the weight is updated in place. float64, larger products or no AVX-512: for a few rows
sgemm/dgemm from scipy.linalg.cython_blas, whose small-M path reads W once as it lies, else
_gemm.pxd's gemm_rowmajor; then one pass over Out that adds the bias and applies the
activation while the row is in cache (an unfused mul + elementwise_add + relu reads and
writes Out three times)."""
cimport numpy as cnp
from cpython.object cimport PyObject
from cpython.ref cimport _Py_REFCNT
from headrace.kernels.common cimport contiguous, dtype_name, shape_of, typenum
from ._common cimport kept
from scipy.linalg.cython_blas cimport dgemm, sgemm
from ._gemm cimport gemm_bias_act, gemm_rowmajor

cnp.import_array()

DTYPES = ("float32", "float64")
cdef Py_ssize_t INT_MAX = 2147483647
cdef Py_ssize_t FEW_ROWS = 4    # up to this many rows of Input: plain BLAS


cdef void _gemm(int t, int M, int N, int K, void* A, void* B, void* C) noexcept nogil:
    """C[M, N] = A[M, K] @ B[K, N], row-major, C overwritten."""
    cdef char no = b'N'
    cdef float f1 = 1, f0 = 0
    cdef double d1 = 1, d0 = 0
    if M > FEW_ROWS:
        gemm_rowmajor(t, False, False, M, N, K, 1.0, A, K, B, N, 0.0, C, N)
    elif t == cnp.NPY_FLOAT32:   # column-major C^T = B^T A^T: no copies
        sgemm(&no, &no, &N, &M, &K, &f1, <float*>B, &N, <float*>A, &K, &f0, <float*>C, &N)
    else:
        dgemm(&no, &no, &N, &M, &K, &d1, <double*>B, &N, <double*>A, &K, &d0, <double*>C, &N)

ctypedef fused real:
    float
    double


cdef void _epilogue(real* out, const real* bias, Py_ssize_t M, Py_ssize_t N,
                    bint relu) noexcept nogil:
    """out[i, j] = act(out[i, j] + bias[j]) (bias NULL: act only), row by row."""
    cdef Py_ssize_t i, j
    cdef real v
    cdef real* row
    for i in range(M):
        row = out + i * N
        if bias != NULL and relu:
            for j in range(N):
                v = row[j] + bias[j]
                row[j] = v if v > 0 else 0
        elif bias != NULL:
            for j in range(N):
                row[j] = row[j] + bias[j]
        else:
            for j in range(N):
                v = row[j]
                row[j] = v if v > 0 else 0


cdef class FC:
    cdef int n
    cdef bint relu
    cdef object _out       # the last result, reused when nothing else holds it (recycled)

    cdef cnp.ndarray _output(self, cnp.ndarray a, int n, Py_ssize_t N, int t):
        """Out, Input's first ``n`` dims and N: the last result where common.recycled would
        reuse it (only the kernel holds it; its dtype, dims, C order, writeable), else new."""
        cdef cnp.npy_intp dims[64]   # (n < Input's rank <= NumPy's 64)
        cdef int i
        cdef cnp.ndarray prev
        for i in range(n):
            dims[i] = cnp.PyArray_DIMS(a)[i]
        dims[n] = N
        if self._out is not None and _Py_REFCNT(<PyObject*>self._out) == 1 and \
                type(self._out) is cnp.ndarray:
            prev = <cnp.ndarray>self._out
            if cnp.PyArray_TYPE(prev) == t and cnp.PyArray_NDIM(prev) == n + 1 and \
                    cnp.PyArray_IS_C_CONTIGUOUS(prev) and cnp.PyArray_ISWRITEABLE(prev):
                for i in range(n + 1):
                    if cnp.PyArray_DIMS(prev)[i] != dims[i]:
                        break
                else:
                    return prev
        return cnp.PyArray_EMPTY(n + 1, dims, t, 0)

    def __init__(self, dict attrs, info=None):
        self.n = attrs["in_num_col_dims"]
        self.relu = attrs["activation_type"] == "relu"

    def __call__(self, x, w, bias):
        # Shapes read from the arrays' dims, tuples only for the messages: the Python tuples
        # and slices of the checks and of Out's shape were ~1/3 of a batch-1 fc call's own
        # cost (~0.45 us a call, three a run of the MLP of benchmarks/bench_inference.py).
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(w)
        cdef cnp.ndarray c = None if bias is None else contiguous(bias)
        cdef int t = typenum(a)
        if t != typenum(b) or (c is not None and t != typenum(c)) or \
                (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64):
            raise TypeError(f"fc: Input, W and Bias must share float32 or float64, got "
                            f"{dtype_name(a)}, {dtype_name(b)} and "
                            f"{'none' if c is None else dtype_name(c)}")
        cdef int i, nd = cnp.PyArray_NDIM(a), n = self.n
        cdef cnp.npy_intp* xd = cnp.PyArray_DIMS(a)
        if not 0 < n < nd or cnp.PyArray_NDIM(b) != 2:
            raise ValueError(f"fc: in_num_col_dims={n} does not fit "
                             f"Input{list(shape_of(a))}, or W{list(shape_of(b))} is not a "
                             f"matrix")
        cdef Py_ssize_t M = 1, K = 1, N = cnp.PyArray_DIMS(b)[1]
        for i in range(n):
            M *= xd[i]
        for i in range(n, nd):
            K *= xd[i]
        if K != cnp.PyArray_DIMS(b)[0]:
            raise ValueError(f"fc: Input{list(shape_of(a))} flattens to [{M}, {K}] but W is "
                             f"{list(shape_of(b))}")
        if c is not None and cnp.PyArray_SIZE(c) != N:
            raise ValueError(f"fc: Bias{list(shape_of(c))} does not hold one value per output "
                             f"column ({N})")
        if M > INT_MAX or N > INT_MAX or K > INT_MAX:
            raise ValueError("fc: a matrix dimension exceeds the BLAS int range")
        cdef cnp.ndarray out = self._output(a, n, N, t)
        self._out = kept(out)   # (None in a pooled run: common.kept)
        if M == 0 or N == 0:
            return (out,)
        if K == 0:
            out.fill(0)
        cdef void* bp = NULL if c is None else cnp.PyArray_DATA(c)
        cdef bint epilogue = c is not None or self.relu
        with nogil:
            if t == cnp.NPY_FLOAT32 and gemm_bias_act(
                    <int>M, <int>N, <int>K, <const float*>cnp.PyArray_DATA(a),
                    <const float*>cnp.PyArray_DATA(b), <const float*>bp, self.relu,
                    <float*>cnp.PyArray_DATA(out)):
                epilogue = False
            elif K > 0:
                _gemm(t, <int>M, <int>N, <int>K, cnp.PyArray_DATA(a), cnp.PyArray_DATA(b),
                      cnp.PyArray_DATA(out))
            if epilogue and t == cnp.NPY_FLOAT32:
                _epilogue(<float*>cnp.PyArray_DATA(out), <const float*>bp, M, N, self.relu)
            elif epilogue:
                _epilogue(<double*>cnp.PyArray_DATA(out), <const double*>bp, M, N, self.relu)
        return (out,)


KERNELS = [("fc", FC, DTYPES)]
