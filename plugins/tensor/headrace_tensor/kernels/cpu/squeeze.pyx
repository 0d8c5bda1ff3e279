# cython: language_level=3
"""squeeze2 and unsqueeze2: Out is a view of X with dims of size 1 removed or inserted (a copy
when X or Out is persistable, as for reshape2), and the XShape placeholder. Their gradients are
reshape2_grad's kernel: Out@GRAD with the shape XShape[1:]."""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain
from ._common cimport int_values, ints_of_list, xshape_of

import numpy as np

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


cdef object declared_rank(object info):
    """Out's rank as the program declared it (None without an info)."""
    if info is None or not info.out_shapes.get("Out") or info.out_shapes["Out"][0] is None:
        return None
    return len(info.out_shapes["Out"][0])


cdef class Squeeze2:
    """squeeze2: (X,) -> (Out, XShape)."""
    cdef list axes
    cdef bint copy
    cdef object rank  # Out's declared rank, or None

    def __init__(self, dict attrs, info=None):
        self.axes = [int(a) for a in attrs["axes"]]
        self.copy = info is None or not info.may_alias("X", "Out")
        self.rank = declared_rank(info)

    def __call__(self, x):
        cdef cnp.ndarray a = dense(x, "squeeze2")
        dims = (<object>a).shape
        rank = len(dims)
        if not self.axes:
            gone = {k for k, d in enumerate(dims) if d == 1}
        else:
            gone = set()
            for ax in self.axes:
                if not (-rank <= ax < rank if rank else ax in (-1, 0)):
                    raise IndexError(f"squeeze2: axis {ax} of 'axes' is out of range for X of "
                                     f"shape {list(dims)}")
                if rank and dims[ax % rank] == 1:
                    gone.add(ax % rank)
        out = tuple(d for k, d in enumerate(dims) if k not in gone)
        if self.rank is not None and len(out) != self.rank:
            raise ValueError(f"squeeze2: axes {self.axes} of X of shape {list(dims)} leave "
                             f"{len(out)} dims, but the program declared Out with {self.rank} "
                             f"(a listed dim unknown when it was built is not 1 now)")
        result = a.copy() if self.copy else a
        return (result.reshape(out), xshape_of(a))


cdef class Unsqueeze2:
    """unsqueeze2: (X, AxesTensor, AxesTensorList) -> (Out, XShape)."""
    cdef list axes
    cdef bint copy

    def __init__(self, dict attrs, info=None):
        self.axes = [int(a) for a in attrs["axes"]]
        self.copy = info is None or not info.may_alias("X", "Out")

    def __call__(self, x, axes_tensor=None, axes_list=None):
        cdef cnp.ndarray a = dense(x, "unsqueeze2")
        if axes_tensor is not None:
            axes = int_values(axes_tensor, "unsqueeze2", "AxesTensor")
        elif axes_list:
            axes = ints_of_list(axes_list, "unsqueeze2", "AxesTensorList")
        else:
            axes = self.axes
        out = list((<object>a).shape)
        for ax in axes:
            rank = len(out)
            if not -rank - 1 <= ax <= rank:
                raise IndexError(f"unsqueeze2: axis {ax} (axes {axes}, applied in turn) is out "
                                 f"of range for a rank-{rank} shape {out}")
            out.insert(ax + rank + 1 if ax < 0 else ax, 1)
        result = a.copy() if self.copy else a
        return (result.reshape(tuple(out)), xshape_of(a))


KERNELS = [
    ("squeeze2", Squeeze2, ALL_DTYPES),
    ("unsqueeze2", Unsqueeze2, ALL_DTYPES),
    ("squeeze2_grad", ReshapeGrad, GRAD_DTYPES),
    ("unsqueeze2_grad", ReshapeGrad, GRAD_DTYPES),
]
