"""The CUDA device: arrays are Numba CUDA device arrays.

Imported only when a CUDAPlace is used. With NUMBA_ENABLE_CUDASIM=1 (set before numba is
imported) the same kernels run in Numba's CUDA simulator, which is how CI checks them.
"""
import numpy as np
from numba import cuda

from ..runtime.place import DeviceUnavailableError

__all__ = ["check_available", "to_device", "to_host", "is_array", "zeros_like", "add",
           "add_to", "cuda"]


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


def zeros_like(value):
    """A new zero device array of ``value``'s shape and dtype."""
    out = cuda.device_array(value.shape, value.dtype)
    if out.size:
        _fill_zero[_blocks(out.size), _THREADS](out.reshape(out.size))
    return out


def add(a, b):
    """A new device array ``a + b`` (same shapes and dtype)."""
    if a.shape != b.shape:
        raise ValueError(f"add: shapes {list(a.shape)} and {list(b.shape)} differ")
    out = cuda.device_array(a.shape, a.dtype)
    if out.size:
        n = out.size
        _add[_blocks(n), _THREADS](a.reshape(n), b.reshape(n), out.reshape(n))
    return out


def add_to(acc, b):
    """``acc += b`` in place (``acc`` a device array the caller made and owns)."""
    if acc.shape != b.shape:
        raise ValueError(f"add_to: shapes {list(acc.shape)} and {list(b.shape)} differ")
    if acc.size:
        n = acc.size
        _add[_blocks(n), _THREADS](acc.reshape(n), b.reshape(n), acc.reshape(n))


_THREADS = 256


def _blocks(n):
    return (n + _THREADS - 1) // _THREADS


@cuda.jit
def _fill_zero(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 0


@cuda.jit
def _add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]
