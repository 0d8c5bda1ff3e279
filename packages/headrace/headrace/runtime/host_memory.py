"""How the host's malloc keeps the memory of kernels' arrays between steps (glibc).

A training step frees and allocates the same large arrays every step (activations, their
gradients, im2col columns). glibc serves a request above its mmap threshold (128 KiB at
start, raised only as mmapped blocks are freed) with a fresh mmap(), so every step pays a
page fault and the OS's zeroing for each 4 KiB page it touches again: on the small ResNet's
training step a third of the step (73 -> 45 ms here). Paddle keeps CPU memory in its own
auto-growth allocator and TensorFlow in its BFC allocator; headrace asks malloc for the same
(``tune``, at the first Executor): blocks up to 32 MiB come from the heap, and up to 256 MiB
of freed memory stays there for the next step instead of going back to the OS. The resident
size then stays at the step's peak, as with those allocators.

``HEADRACE_MALLOC_TUNE=0``, or glibc's own ``MALLOC_MMAP_THRESHOLD_`` set by the user, leaves
malloc as it was; another malloc (jemalloc, tcmalloc preloaded) or a C library without
``mallopt`` is left alone too.

On top of malloc, a CPU Executor's runs allocate their arrays from headrace's own caching
pool (``_host_pool``: size classes, LIFO free lists, 64-byte alignment), installed through
NumPy's ``PyDataMem_SetHandler`` for the duration of each run only, and only for the feed
signatures whose first run allocates 1 MiB or more (``pool_pays``). Why its own: malloc's
heap is shared with everything else in the process, and protobuf's upb calls
``malloc_trim(0)`` every 10,000 message frees (dropping a large program does), which hands
the whole free heap back to the OS, so the next step faults its arrays in afresh (~20 MB,
~7 ms of the first step of benchmarks/bench_build.py's 200-layer program); blocks in the
pool are malloc's "in use" and survive it. The LIFO lists, with the plan letting go of dead
values after their last reader (``liveness``), hand a run's next array the block freed last,
still in cache; kernels that recycle their last output let go of it in a pooled run
(``kernels/common.pxd``'s ``kept``), so the ops share the live set's blocks. Why only during
runs: the handler is a context variable, so the user's own
arrays (and fetched results, copied after the run) keep NumPy's allocator, other threads
are unaffected, and the pool's cache holds only the framework's own steady-state working
set. Arrays made in a run and kept after it (parameters an optimizer wrote, in the scope)
are freed into the pool whenever they die.

``HEADRACE_HOST_POOL=0`` turns the pool off; ``HEADRACE_HOST_POOL_MB`` (default 256) is the
most free memory it caches; ``hr.host_memory`` has its counters and controls
(``memory_allocated``, ``memory_reserved``, ``memory_stats``, ``empty_cache``,
``set_cache_limit``, as ``hr.cuda``'s).
"""
import ctypes
import math
import os
import sys

import numpy as np

M_TRIM_THRESHOLD = -1   # glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20   # glibc's ceiling for the threshold on 64-bit machines
TRIM_THRESHOLD = 256 << 20
POOL_LIMIT_MB = 256
POOL_MIN_RUN = 1 << 20   # bytes a run allocates for the pool to pay (pool_pays)
ALIGN = 64   # bytes: a cache line, one AVX-512 vector (empty_aligned)

_state = {}


def tune():
    """Set malloc's thresholds once per process; whether they were set."""
    if "tuned" not in _state:
        _state["tuned"] = _set_thresholds()
    return _state["tuned"]


def _set_thresholds():
    if os.environ.get("HEADRACE_MALLOC_TUNE", "1") == "0" \
            or "MALLOC_MMAP_THRESHOLD_" in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 \
        and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1


def empty_aligned(shape, dtype):
    """An uninitialized C-contiguous array of ``shape`` and ``dtype`` whose data starts on a
    64-byte boundary (a view into a slightly larger buffer), for arrays that live long and are
    read by every run: parameters loaded from files (io.tensor_stream) and folded by the
    passes. NumPy's allocator gives 16 bytes, so a weight's rows began anywhere in a cache line
    from process to process, and the AVX-512 kernels' 64-byte loads of it then straddle two
    lines each: the batch-1 MLP of benchmarks/bench_inference.py took 19.7 us a run with its
    weights 16 bytes past a line, 18.7 at 32, 17.0 aligned (one process, the same arrays
    copied, interleaved; its ratio to ONNX Runtime, which aligns its weights, went 0.89-1.07
    from run to run). The pool's blocks are 64-byte aligned too, but only runs that allocate a
    mebibyte use it."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return np.empty(shape, dtype)   # no data to align (NumPy gives an empty slice any address)
    buf = np.empty(nbytes + ALIGN, np.uint8)
    start = -buf.__array_interface__["data"][0] % ALIGN
    return buf[start:start + nbytes].view(dtype).reshape(shape)


def pool():
    """The pool module (``_host_pool``: ``enter``/``leave`` around a run) when it is on,
    else None; its cache limit set from the environment at the first call."""
    if "pool" not in _state:
        _state["pool"] = _make_pool()
    return _state["pool"]


def pool_pays(nbytes):
    """Whether runs that allocate ``nbytes`` (a signature's first run, by the pool's block
    capacities) use the pool: entering and leaving it costs ~0.3 us a run (NumPy's handler
    is a context variable), 1.5-2.5% of a batch-1 MLP's 21 us, whose few small arrays stay
    in cache and in malloc's heap anyway; from 1 MiB a run, sharing blocks by liveness pays
    (ResNet inference at batch 64, 27 MB a run: 3-5% less time)."""
    return nbytes >= POOL_MIN_RUN


def _make_pool():
    if os.environ.get("HEADRACE_HOST_POOL", "1") == "0":
        return None
    from . import _host_pool
    mb = os.environ.get("HEADRACE_HOST_POOL_MB")
    try:
        limit = int(float(mb) * (1 << 20)) if mb is not None else POOL_LIMIT_MB << 20
    except ValueError:
        limit = POOL_LIMIT_MB << 20
    _host_pool.set_limit(max(limit, 0))
    return _host_pool
