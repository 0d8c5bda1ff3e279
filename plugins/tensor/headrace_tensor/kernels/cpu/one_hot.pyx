# cython: language_level=3, boundscheck=False
"""one_hot_v2: each id checked against [0, depth) (unless allow_out_of_range: a zero row)."""
cimport numpy as cnp
from headrace import dtypes as dt
from ._common cimport one_int
from ._index cimport check_range, int64_indices, var_name

import numpy as np

cnp.import_array()


cdef class OneHotV2:
    cdef long long depth
    cdef bint allow
    cdef object dtype
    cdef str who

    def __init__(self, dict attrs, info=None):
        self.depth, self.allow = attrs["depth"], attrs["allow_out_of_range"]
        self.dtype = np.dtype(dt.from_proto(attrs["dtype"]))
        self.who = var_name(info, "X")

    def __call__(self, x, depth_tensor=None):
        cdef long long depth = self.depth if depth_tensor is None else \
            one_int(depth_tensor, "one_hot_v2", "depth_tensor")
        if depth < 1:
            raise ValueError(f"one_hot_v2: depth must be >= 1, got {depth}")
        cdef cnp.ndarray ids = int64_indices(x, "one_hot_v2", self.who)
        if not self.allow:
            check_range(ids, 0, 1, ids.size, depth, "one_hot_v2", self.who, "depth")
        flat = ids.reshape(-1)
        out = np.zeros((flat.shape[0], depth), dtype=self.dtype)
        ok = (flat >= 0) & (flat < depth)
        out[np.nonzero(ok)[0], flat[ok]] = 1
        return (out.reshape(tuple(np.shape(ids)) + (depth,)),)


KERNELS = [("one_hot_v2", OneHotV2, ("int32", "int64"))]
