# Index checks of the selection kernels (gather, gather_nd, scatter, one_hot_v2): indices as
# int64 and a bounds check that names the op, the variable and the bad index.
cimport numpy as cnp


cdef inline str var_name(object info, str slot):
    """The variable bound to input ``slot``, for messages (the slot itself without an info)."""
    if info is None or not info.inputs.get(slot):
        return slot
    v = info.inputs[slot][0]
    return slot if v is None else f"{slot} ({v.name})"


cdef inline cnp.ndarray int64_indices(object t, str op, str who):
    """An int tensor's values as a C-contiguous int64 array of the same shape."""
    import numpy as np
    a = np.asarray(t)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: {who} must hold int32/int64 indices, got {a.dtype.name}")
    # (np.require keeps a 0-D array 0-D; np.ascontiguousarray would make it 1-D)
    return np.require(a.astype(np.int64, copy=False), requirements=("C", "A"))


cdef inline Py_ssize_t first_out_of_range(const long long* p, Py_ssize_t n,
                                          Py_ssize_t stride, long long size) noexcept nogil:
    """Position of the first of ``p[0], p[stride], ...`` (n values) outside [0, size), or -1."""
    cdef Py_ssize_t i
    for i in range(n):
        if p[i * stride] < 0 or p[i * stride] >= size:
            return i
    return -1


cdef inline int check_range(cnp.ndarray idx, Py_ssize_t start, Py_ssize_t stride,
                            Py_ssize_t n, long long size, str op, str who,
                            str what) except -1:
    """IndexError unless the ``n`` int64 values at ``start`` step ``stride`` of ``idx`` lie in
    [0, size); ``what`` names the dim they index."""
    cdef const long long* p = <const long long*>cnp.PyArray_DATA(idx) + start
    cdef Py_ssize_t bad
    with nogil:
        bad = first_out_of_range(p, n, stride, size)
    if bad >= 0:
        import numpy as np
        at = [int(k) for k in np.unravel_index(start + bad * stride, (<object>idx).shape)]
        raise IndexError(f"{op}: {who} holds {p[bad * stride]} at {at}, out of range for "
                         f"{what} of size {size} (valid: 0..{size - 1})")
    return 0
