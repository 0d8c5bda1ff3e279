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
"""
import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1   # glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20   # glibc's ceiling for the threshold on 64-bit machines
TRIM_THRESHOLD = 256 << 20

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
