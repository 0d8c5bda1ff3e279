# cython: language_level=3
"""assign_value: the constant given by the values attribute matching dtype.

The constant is built once, when the kernel is made (kernels/host/assign_value.py, shared with
the CUDA kernel); every call returns a fresh copy, since the output variable may be a state
that later ops update in place.
"""
cimport numpy as cnp

from ..host.assign_value import constant

cnp.import_array()


cdef class AssignValue:
    """Out = the constant in the values attribute matching dtype, built once in the maker."""
    cdef cnp.ndarray const

    def __init__(self, dict attrs, info=None):
        self.const = constant(attrs)

    def __call__(self):
        return (self.const.copy(),)


KERNELS = [("assign_value", AssignValue, None)]
