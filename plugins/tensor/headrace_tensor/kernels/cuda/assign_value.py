"""assign_value on CUDA: the constant given by the values attribute matching dtype.

The constant is built and checked once, when the kernel is made (as the CPU kernel), and moved
to the device once, at the first call; every call returns a fresh device copy of it (a kernel),
since the output variable may be a state that later ops update in place.
"""
import numpy as np
from numba import cuda

from headrace import dtypes as _dt
from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import device_copy
from headrace.kernels.scalars import checked_scalar

# dtype -> the attribute holding assign_value's data (Paddle's names).
_VALUE_ATTRS = {"float32": "fp32_values", "int32": "int32_values", "int64": "int64_values",
                "bool": "bool_values", "float64": "fp64_values"}


class AssignValue:
    def __init__(self, attrs, info=None):
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
        self.device_const = None

    def __call__(self):
        if self.device_const is None:
            self.device_const = cuda.to_device(self.const, stream=current_stream())
        return (device_copy(self.device_const),)


KERNELS = [("assign_value", AssignValue, None)]
