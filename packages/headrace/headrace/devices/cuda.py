"""The CUDA device: arrays are Numba CUDA device arrays.

Imported only when a CUDAPlace is used. With NUMBA_ENABLE_CUDASIM=1 (set before numba is
imported) the same kernels run in Numba's CUDA simulator, which is how CI checks them.
"""
import contextlib
import os
import threading

import numpy as np

from ..runtime.place import DeviceUnavailableError
from .cuda_pool import CachingPool

try:
    from numba import cuda
except ImportError as e:   # the CUDA backend is an optional extra; Place.module() names the place
    raise ImportError(f"{e}; CUDAPlace needs Numba's CUDA support: "
                      f"pip install headrace[cuda]") from e

__all__ = ["check_available", "to_device", "to_host", "is_array", "zeros_like", "add",
           "add_to", "cuda", "memory_allocated", "memory_reserved", "empty_cache", "new_stream",
           "use_stream", "current_stream"]

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def check_available(place):
    _install_memory_manager()
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


# --- Streams: each Executor owns one; its run launches and copies on it, asynchronously -----
# Kernels launch on current_stream() (``kernel[blocks, threads, current_stream()]``; a kernel
# maker may also read ``info.stream``). The stream is created blocking, so a kernel that still
# launches on the legacy default stream is ordered with it rather than racing it.

_LOCAL = threading.local()


def new_stream():
    """A new CUDA stream (one per Executor)."""
    return cuda.stream()


def current_stream():
    """The stream of the run in progress on this thread, else the default stream."""
    stream = getattr(_LOCAL, "stream", None)
    return stream if stream is not None else cuda.default_stream()


@contextlib.contextmanager
def use_stream(stream):
    """Make ``stream`` current on this thread for the block (the executor wraps each run)."""
    prev = getattr(_LOCAL, "stream", None)
    _LOCAL.stream = stream
    try:
        yield stream
    finally:
        _LOCAL.stream = prev


def to_device(array, place=None):
    """``array`` on the device, copied on the current stream (queued behind its launches)."""
    if is_array(array):
        return array
    return cuda.to_device(np.ascontiguousarray(array), stream=current_stream())


def to_host(value):
    """``value`` as a host array: the copy is queued on the current stream and waited for, so a
    fetch is where the host synchronizes with the run's asynchronous launches."""
    if is_array(value):
        stream = current_stream()
        host = value.copy_to_host(stream=stream)
        stream.synchronize()
        return host
    return value


def zeros_like(value):
    """A new zero device array of ``value``'s shape and dtype."""
    out = cuda.device_array(value.shape, value.dtype, stream=current_stream())
    if out.size:
        _fill_zero[_blocks(out.size), _THREADS, current_stream()](out.reshape(out.size))
    return out


def add(a, b):
    """A new device array ``a + b`` (same shapes and dtype)."""
    if a.shape != b.shape:
        raise ValueError(f"add: shapes {list(a.shape)} and {list(b.shape)} differ")
    out = cuda.device_array(a.shape, a.dtype, stream=current_stream())
    if out.size:
        n = out.size
        _add[_blocks(n), _THREADS, current_stream()](a.reshape(n), b.reshape(n), out.reshape(n))
    return out


def add_to(acc, b):
    """``acc += b`` in place (``acc`` a device array the caller made and owns)."""
    if acc.shape != b.shape:
        raise ValueError(f"add_to: shapes {list(acc.shape)} and {list(b.shape)} differ")
    if acc.size:
        n = acc.size
        _add[_blocks(n), _THREADS, current_stream()](acc.reshape(n), b.reshape(n),
                                                     acc.reshape(n))


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


# --- The caching allocator (Numba's External Memory Management plugin interface) ---------------

_POOLS = []     # one CachingPool per CUDA context this process made


def _install_memory_manager():
    """Make the caching allocator Numba's memory manager; it has to be set before the first
    context is created, so it runs before any device is selected. The simulator has no EMM:
    there the pool bookkeeping is tested directly (headrace.devices.cuda_pool)."""
    global _INSTALLED
    if _INSTALLED or SIMULATOR or os.environ.get("NUMBA_CUDA_MEMORY_MANAGER"):
        return
    cuda.set_memory_manager(_caching_manager_class())
    _INSTALLED = True


_INSTALLED = False


def _caching_manager_class():
    from numba.cuda import HostOnlyCUDAMemoryManager
    from numba.cuda.cudadrv.driver import MemoryPointer, NumbaCUDAMemoryManager

    class CachingMemoryManager(HostOnlyCUDAMemoryManager):
        """Device memory from a :class:`CachingPool` over Numba's own manager (the driver's
        cuMemAlloc): a freed array's block returns to its size-class pool and is reused by the
        next request of that class. Host (pinned/mapped) memory is the HostOnly base's."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._driver = NumbaCUDAMemoryManager(*args, **kwargs)
            self._pool = CachingPool(self._driver.memalloc, lambda block: block.free())
            _POOLS.append(self._pool)

        def memalloc(self, size):
            block, _ = self._pool.malloc(size)
            # The array gets a view of the block; freeing the view returns the block to the pool.
            return MemoryPointer(self.context, block.device_pointer, size, owner=block,
                                 finalizer=_releaser(self._pool, block))

        def initialize(self):
            super().initialize()
            self._driver.initialize()

        def get_memory_info(self):
            return self._driver.get_memory_info()

        def get_ipc_handle(self, memory):
            return self._driver.get_ipc_handle(memory)

        def reset(self):
            self._pool.empty_cache()
            super().reset()
            self._driver.reset()

        @property
        def interface_version(self):
            return 1

    return CachingMemoryManager


def _releaser(pool, block):
    # A closure over the pool and block only (not the pointer), so the finalizer keeps no cycle.
    return lambda: pool.release(block)


def memory_allocated():
    """Bytes of device memory in arrays that are alive (0 in the simulator, which has no EMM)."""
    return sum(p.allocated for p in _POOLS)


def memory_reserved():
    """Bytes held from the driver: in use plus cached for reuse (0 in the simulator)."""
    return sum(p.reserved for p in _POOLS)


def empty_cache():
    """Give the cached, unused blocks back to the driver (blocks in use stay)."""
    for p in _POOLS:
        p.empty_cache()
