# Helpers of this plugin's CPU kernels; the ones every plugin shares are in
# headrace/kernels/common.pxd (cimported from the core).
cimport numpy as cnp
from headrace.kernels.common cimport contiguous, dtype_name, empty_like, shape_of, same_shape


# -- what every update op checks and decides ---------------------------------------------------

cdef inline cnp.ndarray dense(object x, str op, str slot):
    """A float32/float64 dense input as a contiguous array (selected rows and other values
    are refused by name)."""
    import numpy as np
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: input '{slot}' must be a dense float tensor (a NumPy array on "
                        f"the CPU), got {type(x).__name__}")
    cdef cnp.ndarray a = contiguous(x)
    cdef int t = cnp.PyArray_TYPE(a)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError(f"{op}: input '{slot}' has dtype {dtype_name(a)}, expected float32 or "
                        f"float64")
    return a


cdef inline cnp.ndarray like_param(object x, cnp.ndarray param, str op, str slot):
    """A dense input that must have Param's dtype and shape (Grad, the moments)."""
    cdef cnp.ndarray a = dense(x, op, slot)
    if cnp.PyArray_TYPE(a) != cnp.PyArray_TYPE(param):
        raise TypeError(f"{op}: input '{slot}' is {dtype_name(a)} but Param is "
                        f"{dtype_name(param)}")
    if not same_shape(a, param):
        raise ValueError(f"{op}: input '{slot}' has shape {list(shape_of(a))}, Param has "
                         f"{list(shape_of(param))}")
    return a


cdef inline double scalar(object x, str op, str slot) except? -1.0:
    """The value of a one-element float input (LearningRate, the beta powers)."""
    import numpy as np
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: input '{slot}' must be a one-element tensor, got "
                        f"{type(x).__name__}")
    if x.size != 1 or x.dtype.kind != "f":
        raise ValueError(f"{op}: input '{slot}' must hold one float, got {x.dtype.name} of "
                         f"shape {list(x.shape)}")
    return float(x.reshape(-1)[0])


cdef inline cnp.ndarray target(cnp.ndarray a, object given, bint inplace, list reads,
                               int own):
    """Where the update of input ``a`` (``given`` as the kernel received it) is written.

    ``a`` itself when the op updates it in place, the array is writeable, contiguous() made no
    copy, and no other array the loop reads (``reads``, ``a`` at index ``own``) shares its
    memory: the loops read every input at index i before writing index i, which is safe for
    an output over its own input only. Otherwise a new array (a read-only Param is never
    written: its update goes to a fresh array that replaces it in the scope).
    """
    import numpy as np
    cdef int j
    if inplace and a is given and cnp.PyArray_ISWRITEABLE(a):
        for j in range(len(reads)):
            if j != own and reads[j] is not None and np.may_share_memory(a, reads[j]):
                return empty_like(a)
        return a
    return empty_like(a)
