# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sum: the elementwise sum of N same-shaped inputs (how gradient contributions add up), or
of N tensor arrays position by position.

The first two inputs are added into the output in one pass, each further input is added in
place: every pass is a flat loop over contiguous memory, in input order, so the result equals
((x0 + x1) + x2) + ... exactly. Inputs with no elements are skipped (absent contributions, as
in Paddle), matching the shape rule.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy
from headrace.kernels.common cimport contiguous, dtype_name, same_shape, shape_of, typenum
from headrace.kernels.threads cimport ELEMENT_GRAIN, split_at, threads_for

cnp.import_array()

NUMBERS = ("float32", "float64", "int32", "int64")

ctypedef fused num:
    float
    double
    int
    long long


cdef void _sum_range(const void** xs, Py_ssize_t k, num* out, Py_ssize_t i0,
                     Py_ssize_t i1) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef const num* a = <const num*>xs[0]
    cdef const num* b
    if k == 1:
        memcpy(out + i0, a + i0, (i1 - i0) * sizeof(num))
        return
    b = <const num*>xs[1]
    for i in range(i0, i1):
        out[i] = a[i] + b[i]
    for j in range(2, k):
        b = <const num*>xs[j]
        for i in range(i0, i1):
            out[i] += b[i]


cdef void _sum(const void** xs, Py_ssize_t k, num* out, Py_ssize_t n) noexcept nogil:
    """Split over hr.set_num_threads' threads when each gets ELEMENT_GRAIN values of every
    input (each value is summed in the serial order)."""
    cdef int t, nt = threads_for(<double>n * k, ELEMENT_GRAIN)
    if nt <= 1:
        _sum_range(xs, k, out, 0, n)
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        _sum_range(xs, k, out, split_at(n, t, nt), split_at(n, t + 1, nt))


cdef class Sum:
    def __init__(self, dict attrs=None, info=None):
        pass

    def __call__(self, xs):
        if not isinstance(xs, (list, tuple)) or not xs:
            raise ValueError(f"sum: X must be a non-empty list of tensors, got {xs!r:.80}")
        arrays = sum(1 for v in xs if isinstance(v, list))
        if arrays == len(xs):
            return (_sum_arrays(self, xs),)
        if arrays:
            raise TypeError("sum: X mixes tensor arrays with tensors")
        return (self.dense(list(xs)),)

    cpdef object dense(self, list xs):
        """The sum of a list of arrays (the dense case, and each position of an array sum).
        Typed object: the CUDA kernel (cuda/sum.py) inherits this class's dispatch and
        overrides this method with its device sum."""
        arrays = []
        cdef cnp.ndarray a, ref = None
        cdef int t = -1
        for v in xs:
            a = contiguous(v)
            if t == -1:
                t = typenum(a)
            elif typenum(a) != t:
                raise TypeError(f"sum: inputs differ in dtype: {dtype_name(arrays[0])} and "
                                f"{dtype_name(a)}")
            arrays.append(a)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64 and t != cnp.NPY_INT32 and \
                t != cnp.NPY_INT64:
            raise TypeError(f"sum: dtype {dtype_name(arrays[0])} not supported "
                            f"(float32, float64, int32, int64)")
        # Empty inputs are absent contributions, unless every input is empty.
        shaped = [a for a in arrays if cnp.PyArray_SIZE(a) != 0] or arrays[:1]
        ref = shaped[0]
        for a in shaped:
            if not same_shape(a, ref):
                raise ValueError(f"sum: inputs differ in shape: {list(shape_of(ref))} and "
                                 f"{list(shape_of(a))}")
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(ref), cnp.PyArray_DIMS(ref),
                                                 t, 0)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(ref), k = len(shaped), j
        if n == 0:
            return out
        cdef const void** ptrs = <const void**>calloc(k, sizeof(void*))
        if ptrs == NULL:
            raise MemoryError()
        for j in range(k):
            ptrs[j] = cnp.PyArray_DATA(<cnp.ndarray>shaped[j])
        cdef void* po = cnp.PyArray_DATA(out)
        try:
            with nogil:
                if t == cnp.NPY_FLOAT32:
                    _sum(ptrs, k, <float*>po, n)
                elif t == cnp.NPY_FLOAT64:
                    _sum(ptrs, k, <double*>po, n)
                elif t == cnp.NPY_INT32:
                    _sum(ptrs, k, <int*>po, n)
                else:
                    _sum(ptrs, k, <long long*>po, n)
        finally:
            free(ptrs)
        return out


def _sum_arrays(Sum kernel, list xs):
    """Tensor arrays add up position by position (Paddle's rule): Out has the longest
    input's length, and position i sums the inputs that hold a non-empty tensor there (LoD
    of the first of them); a position none of them holds stays empty (None)."""
    from headrace.runtime.tensor import Tensor, TensorArray
    out = TensorArray()
    for i in range(max(len(a) for a in xs)):
        parts = [a[i] for a in xs if i < len(a) and a[i] is not None]
        datas = [p.data if isinstance(p, Tensor) else p for p in parts]
        full = [k for k, d in enumerate(datas) if getattr(d, "size", 1) != 0]
        if not parts:
            out.append(None)
            continue
        first = parts[full[0]] if full else parts[0]
        out.append(Tensor(kernel.dense(datas), getattr(first, "lod", None)))
    return out


KERNELS = [("sum", Sum, NUMBERS)]
