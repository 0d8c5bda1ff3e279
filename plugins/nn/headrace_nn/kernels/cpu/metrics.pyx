# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""top_k and accuracy.

top_k keeps, per row, a heap of the k best positions seen so far whose root is the worst of
them (O(n log k), no copy of the row), then drains it into descending order. "Better" is a
total order: larger value, NaN above every number, and on equal values the lower index, so the
result is exactly that of a stable descending sort.
"""
cimport numpy as cnp
from libc.stdlib cimport free, malloc
from headrace.kernels.common cimport contiguous, empty, prod, shape_of

import numpy as np

cnp.import_array()

ctypedef fused num:
    float
    double
    int
    long long


cdef inline bint _better(const num* x, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    cdef num va = x[a], vb = x[b]
    if num is float or num is double:
        if va != va:
            return vb == vb or a < b
        if vb != vb:
            return False
    if va > vb:
        return True
    if va < vb:
        return False
    return a < b


cdef inline void _sift_down(const num* x, Py_ssize_t* h, Py_ssize_t n,
                            Py_ssize_t i) noexcept nogil:
    """Restore the heap below i: every parent is worse than its children."""
    cdef Py_ssize_t c, tmp
    while True:
        c = 2 * i + 1
        if c >= n:
            return
        if c + 1 < n and _better(x, h[c], h[c + 1]):
            c += 1          # the worse child
        if not _better(x, h[i], h[c]):
            return
        tmp = h[i]
        h[i] = h[c]
        h[c] = tmp
        i = c


cdef void _topk(const num* x, num* vals, long long* idx, Py_ssize_t rows, Py_ssize_t n,
                Py_ssize_t k, Py_ssize_t* h) noexcept nogil:
    cdef Py_ssize_t r, j, m, p, tmp
    cdef const num* row
    for r in range(rows):
        row = x + r * n
        m = 0
        for j in range(n):
            if m < k:
                # push, then sift up while the parent is better than the new one
                h[m] = j
                p = m
                m += 1
                while p > 0 and _better(row, h[(p - 1) // 2], h[p]):
                    tmp = h[p]
                    h[p] = h[(p - 1) // 2]
                    h[(p - 1) // 2] = tmp
                    p = (p - 1) // 2
            elif _better(row, j, h[0]):
                h[0] = j
                _sift_down(row, h, k, 0)
        # pop the worst first: it goes last
        while m > 0:
            m -= 1
            vals[r * k + m] = row[h[0]]
            idx[r * k + m] = h[0]
            h[0] = h[m]
            _sift_down(row, h, m, 0)


cdef class TopK:
    cdef Py_ssize_t k

    def __init__(self, dict attrs, info=None):
        self.k = attrs.get("k", 1)

    def __call__(self, x, k_tensor=None):
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = cnp.PyArray_TYPE(a)
        cdef tuple xs = shape_of(a)
        cdef Py_ssize_t k = self.k
        if k_tensor is not None:
            kt = np.asarray(k_tensor)
            if kt.size != 1 or kt.dtype.kind not in "iu":
                raise ValueError(f"top_k: K must hold one integer, got {kt.dtype} "
                                 f"shape {list(kt.shape)}")
            k = int(kt.reshape(-1)[0])
        if len(xs) < 1:
            raise ValueError("top_k: X must have a last dim to select from, got shape []")
        cdef Py_ssize_t n = xs[-1], rows = prod(xs[:-1])
        if k < 1 or k > n:
            raise ValueError(f"top_k: k={k} must be in [1, {n}] for X{list(xs)}")
        cdef cnp.ndarray vals = empty(xs[:-1] + (k,), t)
        cdef cnp.ndarray idx = empty(xs[:-1] + (k,), cnp.NPY_INT64)
        if rows == 0:
            return (vals, idx)
        cdef Py_ssize_t* h = <Py_ssize_t*>malloc(k * sizeof(Py_ssize_t))
        if h == NULL:
            raise MemoryError("top_k: no memory for the heap")
        cdef void* xp = cnp.PyArray_DATA(a)
        cdef void* vp = cnp.PyArray_DATA(vals)
        cdef long long* ip = <long long*>cnp.PyArray_DATA(idx)
        try:
            if t == cnp.NPY_FLOAT32:
                with nogil:
                    _topk(<const float*>xp, <float*>vp, ip, rows, n, k, h)
            elif t == cnp.NPY_FLOAT64:
                with nogil:
                    _topk(<const double*>xp, <double*>vp, ip, rows, n, k, h)
            elif t == cnp.NPY_INT32:
                with nogil:
                    _topk(<const int*>xp, <int*>vp, ip, rows, n, k, h)
            elif t == cnp.NPY_INT64 or t == cnp.NPY_LONGLONG:
                with nogil:
                    _topk(<const long long*>xp, <long long*>vp, ip, rows, n, k, h)
            else:
                raise TypeError(f"top_k: X has dtype {a.dtype}, expected float32, float64, "
                                f"int32 or int64")
        finally:
            free(h)
        return (vals, idx)


cdef class Accuracy:
    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, out, indices, label):
        cdef cnp.ndarray o = contiguous(out)
        cdef cnp.ndarray ind = contiguous(indices)
        cdef cnp.ndarray lab = contiguous(label)
        for name, arr in (("Indices", ind), ("Label", lab)):
            if cnp.PyArray_TYPE(arr) != cnp.NPY_INT64 and \
                    cnp.PyArray_TYPE(arr) != cnp.NPY_LONGLONG:
                raise TypeError(f"accuracy: {name} has dtype {arr.dtype}, expected int64")
        cdef tuple os_ = shape_of(o), is_ = shape_of(ind), ls = shape_of(lab)
        if len(is_) != 2 or os_ != is_:
            raise ValueError(f"accuracy: Out{list(os_)} and Indices{list(is_)} must both be "
                             f"the same [N, k]")
        if ls != (is_[0], 1):
            raise ValueError(f"accuracy: Label{list(ls)} must be [{is_[0]}, 1]")
        cdef Py_ssize_t N = is_[0], k = is_[1], i, j, correct = 0
        cdef const long long* ip = <const long long*>cnp.PyArray_DATA(ind)
        cdef const long long* lp = <const long long*>cnp.PyArray_DATA(lab)
        with nogil:
            for i in range(N):
                for j in range(k):
                    if ip[i * k + j] == lp[i]:
                        correct += 1
                        break
        # No rows: accuracy 0 rather than 0/0.
        acc = np.array(<double>correct / N if N else 0.0, dtype=np.float32)
        return (acc, np.array(correct, dtype=np.int32), np.array(N, dtype=np.int32))


KERNELS = [("top_k", TopK, ("float32", "float64", "int32", "int64")),
           ("accuracy", Accuracy, ("float16", "float32", "float64"))]
