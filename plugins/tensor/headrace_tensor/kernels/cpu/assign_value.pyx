# cython: language_level=3
"""assign_value: the constant given by the values attribute matching dtype.

The constant is built once, when the kernel is made (each value converted C-style but checked,
see headrace.kernels.scalars); every call returns a fresh copy, since the output variable may be
a state that later ops update in place.
"""
cimport numpy as cnp

import numpy as np

from headrace import dtypes as _dt
from headrace.kernels.scalars import checked_scalar

cnp.import_array()

# dtype -> the attribute holding assign_value's data (Paddle's names).
_VALUE_ATTRS = {"float32": "fp32_values", "int32": "int32_values", "int64": "int64_values",
                "bool": "bool_values", "float64": "fp64_values"}


cdef class AssignValue:
    """Out = the constant in the values attribute matching dtype, built once in the maker."""
    cdef cnp.ndarray const

    def __init__(self, dict attrs, info=None):
        name = _dt.from_proto(attrs["dtype"])
        if name not in _VALUE_ATTRS:
            raise TypeError(f"assign_value: dtype {attrs['dtype']} ({name}) is not one of "
                            + ", ".join(_VALUE_ATTRS))
        key = _VALUE_ATTRS[name]
        shape = [int(d) for d in attrs["shape"]]
        values = list(attrs.get(key, []))
        n = 1
        for d in shape:
            if d < 0:
                raise ValueError(f"assign_value: shape {shape} has a negative dim")
            n *= d
        if len(values) != n:
            raise ValueError(f"assign_value: {key} holds {len(values)} values, shape {shape} "
                             f"needs {n}")
        dtype = np.dtype(name)
        self.const = np.array([checked_scalar(v, dtype, "assign_value") for v in values],
                              dtype=dtype).reshape(shape)

    def __call__(self):
        return (self.const.copy(),)


KERNELS = [("assign_value", AssignValue, None)]
