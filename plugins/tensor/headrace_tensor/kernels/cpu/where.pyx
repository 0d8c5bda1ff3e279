# cython: language_level=3
"""where and where_grad (numpy.where does the elementwise selection in C)."""
cimport numpy as cnp
from headrace.kernels.common cimport contiguous

import numpy as np

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64")
FLOATS = ("float32", "float64")


cdef cnp.ndarray _condition(object c, tuple shape, str op):
    cdef cnp.ndarray cond = contiguous(c)
    if cond.dtype != np.bool_:
        raise TypeError(f"{op}: Condition must be bool, got {cond.dtype.name}")
    if tuple(np.shape(cond)) != shape:
        raise ValueError(f"{op}: Condition has shape {list(np.shape(cond))}, X "
                         f"{list(shape)}: they must be equal")
    return cond


cdef class Where:
    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, c, x, y):
        xs, ys = np.shape(x), np.shape(y)
        if xs != ys:
            raise ValueError(f"where: X has shape {list(xs)}, Y {list(ys)}: they must be equal")
        if np.asarray(x).dtype != np.asarray(y).dtype:
            raise TypeError(f"where: X is {np.asarray(x).dtype.name}, Y "
                            f"{np.asarray(y).dtype.name}: they must be equal")
        return (np.where(_condition(c, xs, "where"), x, y),)


cdef class WhereGrad:
    cdef bint want_x, want_y

    def __init__(self, dict attrs, info=None):
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_y = info is None or info.wants("Y@GRAD")

    def __call__(self, c, x, y, dout):
        g = np.asarray(dout)
        cond = _condition(c, g.shape, "where_grad")
        zero = np.zeros((), g.dtype)
        return (np.where(cond, g, zero) if self.want_x else None,
                np.where(cond, zero, g) if self.want_y else None)


KERNELS = [("where", Where, ALL_DTYPES), ("where_grad", WhereGrad, FLOATS)]
