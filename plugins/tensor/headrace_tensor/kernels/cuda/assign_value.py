"""assign_value on CUDA: the constant given by the values attribute matching dtype.

The constant is built and checked once, when the kernel is made (kernels/host/assign_value.py,
as the CPU kernel), and moved to the device once, at the first call; every call returns a fresh
device copy of it (a kernel), since the output variable may be a state that later ops update in
place.
"""
from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import device_copy

from ..host.assign_value import constant


class AssignValue:
    def __init__(self, attrs, info=None):
        self.const = constant(attrs)
        self.device_const = None

    def __call__(self):
        if self.device_const is None:
            self.device_const = cuda.to_device(self.const, stream=current_stream())
        return (device_copy(self.device_const),)


KERNELS = [("assign_value", AssignValue, None)]
