# Small inline helpers every CPU kernel module of this plugin shares (cimported, no runtime cost).
# Each plugin keeps its own copy: plugins build in isolation, without the core or each other.
cimport numpy as cnp

ctypedef fused real:
    float
    double


cdef inline bint behaved(cnp.ndarray a):
    """Aligned and in native byte order: raw pointers of the dtype's C type may read it."""
    return cnp.PyArray_ISALIGNED(a) and cnp.PyArray_ISNOTSWAPPED(a)


cdef inline cnp.ndarray _normalized(object x):
    import numpy as np
    a = np.asarray(x)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return np.ascontiguousarray(a)


cdef inline cnp.ndarray contiguous(object x):
    """``x`` as a C-contiguous, aligned, native-endian ndarray (no copy when it already is one).

    Alignment and byte order matter as much as contiguity: kernels read through typed C
    pointers, and PyArray_TYPE reports float32 for a big-endian '>f4' array too.
    """
    if type(x) is cnp.ndarray and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>x) and \
            behaved(<cnp.ndarray>x):
        return <cnp.ndarray>x
    return _normalized(x)


cdef inline cnp.ndarray as_array(object x, str op, str slot):
    """``x`` as a contiguous ndarray; anything that is not an array (a tensor array, selected
    rows, None) is a TypeError naming the op and slot rather than an object array."""
    import numpy as np
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: input '{slot}' must be a dense tensor (a NumPy array on the "
                        f"CPU), got {type(x).__name__}")
    cdef cnp.ndarray a = contiguous(x)
    check_plain(a, op, slot)
    return a


cdef inline int check_plain(cnp.ndarray a, str op, str slot) except -1:
    """Kernels move raw bytes: only plain numeric/bool dtypes may pass (copying the pointers
    of an object array without reference counting would corrupt the interpreter)."""
    if (<object>a).dtype.kind not in "biufc":
        raise TypeError(f"{op}: input '{slot}' has dtype {(<object>a).dtype}, expected a "
                        f"numeric or bool dtype")
    return 0


cdef inline str dtype_name(object a):
    """The dtype's name for messages (``str(a.dtype)`` would show the byte order)."""
    return (<object>a).dtype.name


cdef inline cnp.ndarray empty_like(cnp.ndarray x):
    return cnp.PyArray_EMPTY(cnp.PyArray_NDIM(x), cnp.PyArray_DIMS(x), cnp.PyArray_TYPE(x), 0)


cdef inline cnp.ndarray empty(tuple shape, int typenum):
    # 64 = NPY_MAXDIMS of NumPy 2; NumPy itself refuses more, so this only guards the stack.
    cdef cnp.npy_intp dims[64]
    cdef int i, nd = len(shape)
    if nd > 64:
        raise ValueError(f"a result of rank {nd} exceeds NumPy's 64 dims")
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


cdef inline int typenum(cnp.ndarray a) noexcept:
    """PyArray_TYPE with NumPy's second 64-bit integer code (``np.longlong``, also named
    int64 on LP64 systems) folded into NPY_INT64, so kernels dispatch on one code per dtype."""
    cdef int t = cnp.PyArray_TYPE(a)
    if t == cnp.NPY_LONGLONG and sizeof(long long) == sizeof(cnp.npy_int64):
        return cnp.NPY_INT64
    return t


cdef inline Py_ssize_t prod(object dims):
    """The product of a shape (1 for ``()``)."""
    cdef Py_ssize_t n = 1
    for d in dims:
        n *= <Py_ssize_t>d
    return n


# -- values given by tensors (shapes, axes, sections) -----------------------------------------

cdef inline list int_values(object t, str op, str slot):
    """The integers held by an int tensor (any shape, row-major) as a Python list."""
    import numpy as np
    a = np.asarray(t)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: input '{slot}' must hold integers (int32/int64), got "
                        f"{a.dtype.name}")
    return [int(v) for v in a.reshape(-1)]


cdef inline object one_int(object t, str op, str slot):
    """The single integer of a one-element int tensor."""
    vals = int_values(t, op, slot)
    if len(vals) != 1:
        raise ValueError(f"{op}: input '{slot}' must hold exactly one element, got "
                         f"{len(vals)}")
    return vals[0]


cdef inline list ints_of_list(object ts, str op, str slot):
    """One integer from each one-element tensor of a duplicable slot."""
    return [one_int(t, op, f"{slot}[{i}]") for i, t in enumerate(ts)]


cdef inline int norm_axis(object axis, int rank, str op, str what="axis") except? -1:
    """A possibly negative axis as 0..rank-1; an IndexError names the op and the value."""
    if not -rank <= axis < rank:
        raise IndexError(f"{op}: {what} {axis} is out of range for rank {rank} (valid: "
                         f"{-rank}..{rank - 1})")
    return axis + rank if axis < 0 else axis


# -- aliasing ---------------------------------------------------------------------------------

cdef inline bint any_persistable(object info, tuple slots):
    """Whether a variable bound to one of ``slots`` (input or output slot names) is persistable.

    View-returning kernels (reshape, flatten, lod_reset) copy instead when this holds: a
    persistable variable's array may be updated in place later (optimizer ops write Param and
    their state into the existing arrays), which would show through a view, and a view output
    bound to a persistable variable would let such an update write into the input's array.
    Without an info (a kernel called directly) nothing is known to be persistable.
    """
    if info is None:
        return False
    op = info.op
    block = op.block
    for slot in slots:
        for names in (op.inputs.get(slot, ()), op.outputs.get(slot, ())):
            for n in names:
                if n != "@EMPTY@" and block.var_recursive(n).persistable:
                    return True
    return False


cdef inline object xshape_of(cnp.ndarray x):
    """The XShape placeholder of reshape2/transpose2/flatten: shape [0] + X.dims, X's dtype,
    no data (only its shape reaches the backward pass)."""
    cdef int i, nd = cnp.PyArray_NDIM(x)
    cdef cnp.npy_intp dims[65]
    if nd > 63:
        raise ValueError(f"XShape of a rank-{nd} tensor exceeds NumPy's 64 dims")
    dims[0] = 0
    for i in range(nd):
        dims[i + 1] = cnp.PyArray_DIMS(x)[i]
    return cnp.PyArray_EMPTY(nd + 1, dims, cnp.PyArray_TYPE(x), 0)
