# Small inline helpers every CPU kernel module of this plugin shares (cimported, no runtime cost).
# Each plugin keeps its own copy: plugins build in isolation, without the core or each other.
cimport numpy as cnp

ctypedef fused real:
    float
    double


cdef inline cnp.ndarray contiguous(object x):
    """``x`` as a C-contiguous ndarray (no copy when it already is one)."""
    if type(x) is cnp.ndarray and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>x) and \
            cnp.PyArray_ISBEHAVED_RO(<cnp.ndarray>x):
        return <cnp.ndarray>x
    import numpy as np
    a = np.asarray(x, order="C")  # not ascontiguousarray: that turns 0-D into [1]
    # Kernels read raw pointers: a byte-swapped or unaligned array would be read as garbage.
    if not a.dtype.isnative or not a.flags.aligned:
        a = np.array(a, dtype=a.dtype.newbyteorder("="), order="C", copy=True)
    return a


cdef inline cnp.ndarray empty_like(cnp.ndarray x):
    return cnp.PyArray_EMPTY(cnp.PyArray_NDIM(x), cnp.PyArray_DIMS(x), cnp.PyArray_TYPE(x), 0)


cdef inline cnp.ndarray empty(tuple shape, int typenum):
    cdef cnp.npy_intp dims[32]
    cdef int i, nd = len(shape)
    for i in range(nd):
        dims[i] = shape[i]
    return cnp.PyArray_EMPTY(nd, dims, typenum, 0)


cdef inline tuple shape_of(cnp.ndarray a):
    """The shape as a Python tuple (``a.shape`` on a typed ndarray is the C pointer)."""
    cdef int i, nd = cnp.PyArray_NDIM(a)
    cdef cnp.npy_intp* d = cnp.PyArray_DIMS(a)
    return tuple([d[i] for i in range(nd)])


cdef inline bint same_shape(cnp.ndarray a, cnp.ndarray b):
    cdef int i, nd = cnp.PyArray_NDIM(a)
    if nd != cnp.PyArray_NDIM(b):
        return False
    for i in range(nd):
        if cnp.PyArray_DIMS(a)[i] != cnp.PyArray_DIMS(b)[i]:
            return False
    return True


cdef inline Py_ssize_t prod(tuple dims):
    """The product of a shape (1 for ``()``)."""
    cdef Py_ssize_t n = 1
    for d in dims:
        n *= <Py_ssize_t>d
    return n



cdef inline bint bound(object info, str slot):
    """Is output ``slot`` bound to a variable? Grad kernels skip the gradients nobody wants
    (an unbound optional output, or ``@EMPTY@``); a direct call without ``info`` computes all."""
    if info is None:
        return True
    names = info.op.outputs.get(slot)
    return bool(names) and names[0] != "@EMPTY@"


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
