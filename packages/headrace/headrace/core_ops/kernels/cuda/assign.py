"""assign on CUDA: Out = a copy of X (a tensor, or a tensor array: a new array of copied
tensors), made by a copy kernel on the device.

Always a real copy, never X itself: Out is often a persistable variable that optimizer ops
later update in place, which must not write through into X's array.
"""
import numpy as np

from headrace.kernels.cuda_launch import device_copy

from ..host.assign import each_tensor

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


def _copy_of(x):
    if not hasattr(x, "copy_to_host") or isinstance(x, np.ndarray):
        raise TypeError(f"assign: X must be a tensor or a tensor array, got "
                        f"{type(x).__name__}")
    return device_copy(x)


class Assign:
    def __init__(self, attrs, info=None):
        pass

    def __call__(self, x):
        if isinstance(x, list):
            # Tensor arrays: each element copied with its LoD; unwritten positions stay None.
            return (each_tensor(x, _copy_of),)
        return (_copy_of(x),)


KERNELS = [("assign", Assign, ALL_DTYPES)]
