"""The CUDA device: arrays are Numba CUDA device arrays.

Imported only when a CUDAPlace is used. With NUMBA_ENABLE_CUDASIM=1 (set before numba is
imported) the same kernels run in Numba's CUDA simulator, which is how CI checks them.
"""
import contextlib
import importlib
import importlib.metadata
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
           "use_stream", "current_stream", "new_flag", "check_flag", "deferred_checks"]

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
    if not SIMULATOR:   # the simulator runs kernels as Python: it never lowers them
        problem = compiler_problem()
        if problem:
            raise DeviceUnavailableError(f"{place!r}: {problem}")


# The first kernel's compilation imports numba-cuda's lowering of NumPy functions: where the
# installed NumPy lacks a function that module registers, every kernel fails to compile with a
# bare AttributeError. Seen on an H100 (2026-11-27): numba-cuda 0.30.4 with NumPy 2.5.2, which
# removed numpy.row_stack; every op's first launch failed "module 'numpy' has no attribute
# 'row_stack'". Importing it up front turns that into one message at CUDAPlace's first use.
_LOWERING_MODULE = "numba.cuda.np.arrayobj"
_COMPILER_OK = False


def compiler_problem():
    """Why Numba's CUDA compiler cannot start with the installed packages, or None."""
    global _COMPILER_OK
    if _COMPILER_OK:
        return None
    try:
        importlib.import_module(_LOWERING_MODULE)
    except Exception as e:   # any failure here is an install mismatch, not the user's program
        return (f"Numba's CUDA compiler cannot start: importing {_LOWERING_MODULE} failed "
                f"({type(e).__name__}: {e}) with numba-cuda {_version('numba-cuda')} and "
                f"NumPy {np.__version__}, which do not work together; install versions that do "
                f"(numba-cuda 0.30 and older need NumPy < 2.5: pip install 'numpy<2.5')")
    _COMPILER_OK = True
    return None


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


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


# --- Index checks, read once per run ---------------------------------------------------------
# A kernel that may meet a bad index (a label or an id out of range) records the first bad
# position in a one-element slot of the run's flag buffer (an atomic min) and leaves the check
# to the end of the run: the executor reads every slot with one copy when the run's ops are
# done and raises the first bad index at its op. No op stalls the stream on a flag of its own.
# Outside an executor's run (a kernel called directly) the check happens at once.

_FLAG_SLOTS = 64


class _Checks:
    """The flag buffers of this thread's runs (kept, so a step allocates none after the first)
    and the checks the run in progress queued."""

    def __init__(self):
        self.buffers, self.used, self.queued, self.depth = [], 0, [], 0
        self.slots = {}   # id(flag view) -> its slot, for the flags of the run in progress


def _checks():
    c = getattr(_LOCAL, "checks", None)
    if c is None:
        c = _LOCAL.checks = _Checks()
    return c


@cuda.jit
def _set_flag(flag, v):
    flag[0] = v


def new_flag(n):
    """A one-element int64 device slot holding ``n`` ("nothing bad"), for a kernel to record the
    first bad position with ``cuda.atomic.min(flag, 0, i)``; hand it to :func:`check_flag`.
    Kernels import it, with the check that names their op, from headrace.kernels.cuda_launch."""
    c, stream = _checks(), current_stream()
    if c.depth == 0:
        flag = cuda.device_array(1, dtype=np.int64, stream=stream)
    else:
        b, k = divmod(c.used, _FLAG_SLOTS)
        if b == len(c.buffers):
            c.buffers.append(cuda.device_array(_FLAG_SLOTS, dtype=np.int64, stream=stream))
        flag = c.buffers[b][k:k + 1]
        c.slots[id(flag)] = c.used
        c.used += 1
    _set_flag[1, 1, stream](flag, n)
    return flag


def check_flag(flag, n, report):
    """Raise ``report(position)`` (an exception) if the kernel recorded a bad position in
    ``flag``: at the end of the executor's run, or at once outside one."""
    c = _checks()
    if c.depth == 0:
        pos = int(flag.copy_to_host(stream=current_stream())[0])
        if pos < n:
            raise report(pos)
        return
    c.queued.append((c.slots[id(flag)], n, report))


@contextlib.contextmanager
def deferred_checks():
    """The executor wraps each run: the checks its kernels queue are read with one copy at the
    end (only when some kernel queued one) and the first bad one raised."""
    c = _checks()
    c.depth += 1
    outer = c.depth > 1
    if not outer:
        c.used, c.queued, c.slots = 0, [], {}
    try:
        yield
    finally:
        c.depth -= 1
    if outer or not c.queued:
        return
    queued, c.queued = c.queued, []
    stream = current_stream()
    host = np.concatenate([b.copy_to_host(stream=stream)
                           for b in c.buffers[:(c.used + _FLAG_SLOTS - 1) // _FLAG_SLOTS]])
    stream.synchronize()
    for slot, n, report in queued:
        if host[slot] < n:
            raise report(int(host[slot]))


def to_device(array, place=None):
    """``array`` on the device, copied on the current stream (queued behind its launches)."""
    if is_array(array):
        return array
    # np.ascontiguousarray makes a 0-D array 1-D: keep the shape (a 0-D feed stays 0-D).
    host = np.asarray(array)
    return cuda.to_device(np.ascontiguousarray(host).reshape(host.shape),
                          stream=current_stream())


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
