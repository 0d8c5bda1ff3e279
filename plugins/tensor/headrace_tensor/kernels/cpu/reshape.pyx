# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""reshape2 and flatten_contiguous_range: the same elements, in row-major order, a new shape.

Out is a view of X's (contiguous) array, no copy: NumPy arrays share data safely here because
no kernel ever writes into its inputs, and the only ops that write into an existing array are
the optimizer updates (ParamOut bound to Param), which do so only for persistable variables.
So a view is copied instead when X or Out is persistable (known from the op's variables when
the kernel is made): X's array may be updated in place after this op ran, which would show
through the view, and a persistable Out updated in place would write into X's array. A
non-contiguous X is made contiguous first (that copy is then the result's own data).

XShape is a placeholder with shape [0] + X.dims and X's dtype and no data: only its shape is
read (by the backward pass).

reshape2_grad and flatten_contiguous_range_grad are one kernel: X@GRAD = Out@GRAD with the
shape XShape[1:], a view by the same rules.
"""
cimport numpy as cnp
from headrace.kernels.common cimport dtype_name, shape_of, typenum
from ._common cimport as_array, int_values, ints_of_list, norm_axis, xshape_of

from ..host.reshape import resolve

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


cdef Py_ssize_t _prod(object dims):
    cdef Py_ssize_t n = 1
    for d in dims:
        n *= <Py_ssize_t>d
    return n


cdef object reshaped(cnp.ndarray a, object x, tuple dims, bint own):
    """``a`` (X made contiguous) with shape ``dims``: a view, or a copy when ``own`` is asked
    and ``a`` is still X's own array."""
    if own and a is x:
        a = cnp.PyArray_NewCopy(a, cnp.NPY_CORDER)
    return a.reshape(dims)


cdef class Reshape2:
    """inputs X, Shape (1-D int tensor), ShapeTensor (one-element int tensors); ShapeTensor
    beats Shape beats the attribute, and all three follow the 0 / -1 rules."""
    cdef tuple shape
    cdef bint own

    def __init__(self, dict attrs, info=None):
        self.shape = tuple([int(d) for d in attrs["shape"]])
        self.own = info is not None and not info.may_alias("X", "Out")

    def __call__(self, x, shape=None, shape_tensor=None):
        cdef cnp.ndarray a = as_array(x, "reshape2", "X")
        if shape_tensor:
            dims = resolve(tuple(ints_of_list(shape_tensor, "reshape2", "ShapeTensor")),
                           shape_of(a), "input 'ShapeTensor'")
        elif shape is not None:
            dims = resolve(tuple(int_values(shape, "reshape2", "Shape")), shape_of(a),
                           "input 'Shape'")
        else:
            dims = resolve(self.shape, shape_of(a), "attribute 'shape'")
        return (reshaped(a, x, dims, self.own), xshape_of(a))


cdef class FlattenContiguousRange:
    """Out = X with dims start_axis..stop_axis (inclusive) merged; a 0-D X gives [1]."""
    cdef int start, stop
    cdef bint own

    def __init__(self, dict attrs, info=None):
        self.start, self.stop = attrs["start_axis"], attrs["stop_axis"]
        self.own = info is not None and not info.may_alias("X", "Out")

    def __call__(self, x):
        cdef cnp.ndarray a = as_array(x, "flatten_contiguous_range", "X")
        cdef tuple xdims = shape_of(a)
        cdef list dims = list(xdims) or [1]
        cdef int rank = len(dims)
        cdef int start = norm_axis(self.start, rank, "flatten_contiguous_range", "start_axis")
        cdef int stop = norm_axis(self.stop, rank, "flatten_contiguous_range", "stop_axis")
        if start > stop:
            raise ValueError(f"flatten_contiguous_range: start_axis {self.start} ({start}) "
                             f"comes after stop_axis {self.stop} ({stop}) for rank {len(xdims)}")
        out = tuple(dims[:start] + [_prod(dims[start:stop + 1])] + dims[stop + 1:])
        return (reshaped(a, x, out, self.own), xshape_of(a))


GRAD_DTYPES = ("float32", "float64")


cdef tuple x_dims_of(object xshape, cnp.ndarray dout, str op):
    """X.dims from XShape ([0] + X.dims), after checking XShape against Out@GRAD: a float32 or
    float64 dtype shared by both, rank >= 1."""
    cdef cnp.ndarray xs = as_array(xshape, op, "XShape")
    if cnp.PyArray_NDIM(xs) == 0:
        raise ValueError(f"{op}: XShape must be [0] + X.dims (rank >= 1), got a 0-D tensor")
    if dtype_name(dout) not in GRAD_DTYPES:
        raise TypeError(f"{op}: Out@GRAD has dtype {dtype_name(dout)}; supported: "
                        f"{', '.join(GRAD_DTYPES)}")
    if typenum(xs) != typenum(dout):
        raise TypeError(f"{op}: Out@GRAD is {dtype_name(dout)} but X (XShape) is "
                        f"{dtype_name(xs)}")
    return shape_of(xs)[1:]


cdef class ReshapeGrad:
    """reshape2_grad / flatten_contiguous_range_grad: (XShape, Out@GRAD) -> (X@GRAD,), where
    X@GRAD = Out@GRAD (same elements, row-major) with the shape XShape[1:]."""
    cdef str op
    cdef bint own

    def __init__(self, dict attrs, info=None, op="reshape2_grad"):
        self.op = info.op_type if info is not None else op
        self.own = info is not None and not info.may_alias("Out@GRAD", "X@GRAD")

    def __call__(self, xshape, dout):
        cdef cnp.ndarray g = as_array(dout, self.op, "Out@GRAD")
        cdef tuple xdims = x_dims_of(xshape, g, self.op)
        if _prod(xdims) != cnp.PyArray_SIZE(g):
            raise ValueError(f"{self.op}: Out@GRAD of shape {list(shape_of(g))} "
                             f"({cnp.PyArray_SIZE(g)} elements) does not fit X's shape "
                             f"{list(xdims)} ({_prod(xdims)} elements, from XShape)")
        return (reshaped(g, dout, xdims, self.own),)


KERNELS = [
    ("reshape2", Reshape2, ALL_DTYPES),
    ("flatten_contiguous_range", FlattenContiguousRange, ALL_DTYPES),
    ("reshape2_grad", ReshapeGrad, GRAD_DTYPES),
    ("flatten_contiguous_range_grad", ReshapeGrad, GRAD_DTYPES),
]
