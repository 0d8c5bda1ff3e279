# cython: language_level=3
"""stack and its gradient. stack copies (np.stack into a new array); stack_grad's slices are
views of Y@GRAD, as unstack's are of X, unless a persistable variable is involved."""
import numpy as np

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")
GRAD_DTYPES = ("float32", "float64")


cdef int _axis(int axis, int rank, str op) except? -1:
    if not -rank <= axis < rank:
        raise IndexError(f"{op}: axis {axis} is out of range for a result of rank {rank} "
                         f"(valid: {-rank}..{rank - 1})")
    return axis + rank if axis < 0 else axis


cdef class Stack:
    """stack: (X,) -> (Y,), Y = numpy.stack(X, axis)."""
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.axis = attrs["axis"]

    def __call__(self, xs):
        if not isinstance(xs, list) or not xs:
            raise ValueError("stack: X must be a non-empty list of tensors")
        arrays = []
        for i, x in enumerate(xs):
            if not isinstance(x, np.ndarray):
                raise TypeError(f"stack: input 'X[{i}]' must be a dense tensor (a NumPy array "
                                f"on the CPU), got {type(x).__name__}")
            if x.shape != xs[0].shape or x.dtype != xs[0].dtype:
                raise ValueError(f"stack: X[{i}] is {x.dtype.name} {list(x.shape)} but X[0] "
                                 f"is {xs[0].dtype.name} {list(xs[0].shape)}; all must match")
            arrays.append(x)
        return (np.stack(arrays, _axis(self.axis, xs[0].ndim + 1, "stack")),)


cdef class StackGrad:
    """stack_grad: (Y@GRAD,) -> (X@GRAD,): the slices of Y@GRAD along axis; entries nobody
    wants (info.wanted) are None."""
    cdef int axis
    cdef object wanted
    cdef bint copy

    def __init__(self, dict attrs, info=None):
        self.axis = attrs["axis"]
        self.wanted = info.wanted("X@GRAD") if info is not None else None
        self.copy = info is None or not info.may_alias("Y@GRAD", "X@GRAD")

    def __call__(self, dy):
        if not isinstance(dy, np.ndarray):
            raise TypeError(f"stack_grad: input 'Y@GRAD' must be a dense tensor, got "
                            f"{type(dy).__name__}")
        if dy.dtype.name not in GRAD_DTYPES:
            raise TypeError(f"stack_grad: Y@GRAD has dtype {dy.dtype.name}; supported: "
                            f"{', '.join(GRAD_DTYPES)}")
        if dy.ndim == 0:
            raise ValueError("stack_grad: Y@GRAD is 0-D; it must have the stacked axis")
        cdef int axis = _axis(self.axis, dy.ndim, "stack_grad")
        cdef Py_ssize_t n = dy.shape[axis], k
        wanted = [True] * n if self.wanted is None else self.wanted
        if len(wanted) != n:
            raise ValueError(f"stack_grad: {len(wanted)} X@GRAD variables for {n} slices of "
                             f"Y@GRAD {list(dy.shape)} along axis {axis}")
        lead = (slice(None),) * axis
        out = []
        for k in range(n):
            if not wanted[k]:
                out.append(None)
            elif self.copy:
                out.append(np.take(dy, k, axis=axis))
            else:
                out.append(dy[lead + (k,)])
        return (out,)


KERNELS = [("stack", Stack, ALL_DTYPES), ("stack_grad", StackGrad, GRAD_DTYPES)]
