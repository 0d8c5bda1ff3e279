# cython: language_level=3
"""arg_max and arg_min (numpy's argmax/argmin: the first index on ties)."""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain, contiguous
from ._common cimport norm_axis

import numpy as np

cnp.import_array()

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


cdef class _Arg:
    cdef long long axis
    cdef bint keepdims, flatten, is_max
    cdef object out_dtype
    cdef str op

    def __init__(self, dict attrs, info=None, bint is_max=True):
        self.axis, self.keepdims = attrs["axis"], attrs["keepdims"]
        self.flatten, self.is_max = attrs["flatten"], is_max
        self.out_dtype = np.int32 if attrs["dtype"] == 2 else np.int64
        self.op = "arg_max" if is_max else "arg_min"

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        check_plain(a, self.op, "X")
        find = np.argmax if self.is_max else np.argmin
        if self.flatten:
            if a.size == 0:
                raise ValueError(f"{self.op}: X{list(np.shape(a))} has no entries")
            k = find(a.reshape(-1))
            shape = (1,) * a.ndim if self.keepdims else ()     # 0-D, as in Paddle 3
            return (np.full(shape, k, dtype=self.out_dtype),)
        if a.ndim == 0:
            raise ValueError(f"{self.op}: X is 0-D; set flatten to search it")
        cdef int axis = norm_axis(self.axis, a.ndim, self.op)
        if a.shape[axis] == 0:
            raise ValueError(f"{self.op}: X{list(np.shape(a))} has no entries along axis "
                             f"{axis}")
        out = find(a, axis=axis, keepdims=bool(self.keepdims)).astype(self.out_dtype)
        return (out,)


cdef class ArgMax(_Arg):
    def __init__(self, dict attrs, info=None):
        _Arg.__init__(self, attrs, info, True)


cdef class ArgMin(_Arg):
    def __init__(self, dict attrs, info=None):
        _Arg.__init__(self, attrs, info, False)


KERNELS = [("arg_max", ArgMax, DTYPES), ("arg_min", ArgMin, DTYPES)]
