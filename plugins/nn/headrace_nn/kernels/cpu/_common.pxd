# Helpers of this plugin's CPU kernels; the ones every plugin shares are in
# headrace/kernels/common.pxd (cimported from the core).
cimport numpy as cnp
from headrace.kernels.common cimport contiguous, shape_of


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
