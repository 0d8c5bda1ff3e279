"""The CUDA device: arrays are Numba CUDA device arrays.

Imported only when a CUDAPlace is used. With NUMBA_ENABLE_CUDASIM=1 (set before numba is
imported) the same kernels run in Numba's CUDA simulator, which is how CI checks them.
"""
import numpy as np
from numba import cuda

from ..runtime.place import DeviceUnavailableError

__all__ = ["check_available", "to_device", "to_host", "is_array", "cuda"]


def check_available(place):
    if not cuda.is_available():
        raise DeviceUnavailableError(
            f"{place!r}: no CUDA device is visible (set NUMBA_ENABLE_CUDASIM=1 before "
            f"importing numba to use the simulator)")
    n = len(cuda.gpus)
    if place.device_id >= n:
        raise DeviceUnavailableError(f"{place!r}: only {n} CUDA device(s) are visible")
    cuda.select_device(place.device_id)


def is_array(value):
    # Device arrays (real or simulated) have copy_to_host; the simulator lacks is_cuda_array.
    return hasattr(value, "copy_to_host") and not isinstance(value, np.ndarray)


def to_device(array, place=None):
    if is_array(array):
        return array
    return cuda.to_device(np.ascontiguousarray(array))


def to_host(value):
    if is_array(value):
        return value.copy_to_host()
    return value
