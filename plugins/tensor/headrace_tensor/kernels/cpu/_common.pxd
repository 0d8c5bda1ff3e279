# Helpers of this plugin's CPU kernels; the ones every plugin shares are in
# headrace/kernels/common.pxd (cimported from the core).
cimport numpy as cnp
from headrace.kernels.common cimport contiguous, check_plain


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
