# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""assign: Out = a copy of X (a tensor, or a tensor array: a new array of copied tensors).

Always a real copy, never X itself: Out is often a persistable variable (assign is how Fluid
initializes one from another) that optimizer ops later update in place, which must not write
through into X's array.
"""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain, contiguous

import numpy as np

from ..host.assign import each_tensor

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


cdef cnp.ndarray copy_of(object x):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"assign: X must be a tensor or a tensor array, got "
                        f"{type(x).__name__}")
    cdef cnp.ndarray a = contiguous(x)
    check_plain(a, "assign", "X")
    if a is x:  # contiguous() made no copy of its own
        a = cnp.PyArray_NewCopy(a, cnp.NPY_CORDER)
    return a


cdef class Assign:
    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x):
        if isinstance(x, list):
            # Tensor arrays: each element copied with its LoD; unwritten positions stay None.
            return (each_tensor(x, lambda d: copy_of(d)),)
        return (copy_of(x),)


KERNELS = [("assign", Assign, ALL_DTYPES)]
