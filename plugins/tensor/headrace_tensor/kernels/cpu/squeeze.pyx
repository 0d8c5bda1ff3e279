# cython: language_level=3
"""squeeze2 and unsqueeze2: Out is a view of X with dims of size 1 removed or inserted (a copy
when X or Out is persistable, as for reshape2), and the XShape placeholder. Their gradients are
reshape2_grad's kernel: Out@GRAD with the shape XShape[1:]. Out's dims: kernels/host/squeeze.py
(shared with the CUDA kernel, cached per shape)."""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain
from ._common cimport int_values, ints_of_list, xshape_of

import numpy as np

from ..host.squeeze import declared_rank, squeezed, unsqueezed
from .reshape import ReshapeGrad

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")
GRAD_DTYPES = ("float32", "float64")


cdef cnp.ndarray dense(object x, str op):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: input 'X' must be a dense tensor (a NumPy array on the CPU), "
                        f"got {type(x).__name__}")
    check_plain(<cnp.ndarray>x, op, "X")
    return <cnp.ndarray>x


cdef class Squeeze2:
    """squeeze2: (X,) -> (Out, XShape)."""
    cdef tuple axes
    cdef bint copy
    cdef object rank  # Out's declared rank, or None

    def __init__(self, dict attrs, info=None):
        self.axes = tuple([int(a) for a in attrs["axes"]])
        self.copy = info is None or not info.may_alias("X", "Out")
        self.rank = declared_rank(info)

    def __call__(self, x):
        cdef cnp.ndarray a = dense(x, "squeeze2")
        out = squeezed(self.axes, (<object>a).shape, self.rank)
        result = a.copy() if self.copy else a
        return (result.reshape(out), xshape_of(a))


cdef class Unsqueeze2:
    """unsqueeze2: (X, AxesTensor, AxesTensorList) -> (Out, XShape)."""
    cdef tuple axes
    cdef bint copy

    def __init__(self, dict attrs, info=None):
        self.axes = tuple([int(a) for a in attrs["axes"]])
        self.copy = info is None or not info.may_alias("X", "Out")

    def __call__(self, x, axes_tensor=None, axes_list=None):
        cdef cnp.ndarray a = dense(x, "unsqueeze2")
        if axes_tensor is not None:
            axes = tuple(int_values(axes_tensor, "unsqueeze2", "AxesTensor"))
        elif axes_list:
            axes = tuple(ints_of_list(axes_list, "unsqueeze2", "AxesTensorList"))
        else:
            axes = self.axes
        out = unsqueezed(axes, (<object>a).shape)
        result = a.copy() if self.copy else a
        return (result.reshape(out), xshape_of(a))


KERNELS = [
    ("squeeze2", Squeeze2, ALL_DTYPES),
    ("unsqueeze2", Unsqueeze2, ALL_DTYPES),
    ("squeeze2_grad", ReshapeGrad, GRAD_DTYPES),
    ("unsqueeze2_grad", ReshapeGrad, GRAD_DTYPES),
]
