# cython: language_level=3
"""The kernels' thread count (C level) and the BLAS library's thread switch.

``threads_for(work, grain)`` is what a kernel asks before a parallel loop: 1 (stay serial)
unless there is at least ``grain`` of work per thread, so small ops never pay OpenMP's fork and
join. ``blas_serial()`` / ``blas_restore(previous)`` bracket a parallel loop whose body calls
BLAS: each OpenMP thread then calls a one-thread BLAS, instead of every thread asking BLAS's
own pool for all the cores (which oversubscribes them, or serializes on the pool's lock).
The Python side (``headrace.runtime.threads``) sets the count and binds the BLAS functions.
"""
from cython.parallel cimport parallel, threadid
from libc.stdint cimport uintptr_t

ctypedef void (*set_fn)(int) noexcept nogil
ctypedef int (*get_fn)() noexcept nogil

cdef int _threads = 1
cdef set_fn _blas_set = NULL
cdef get_fn _blas_get = NULL


cdef int num_threads() noexcept nogil:
    return _threads


cdef int threads_for(double work, double grain) noexcept nogil:
    """Threads for ``work`` units when each thread should get ``grain`` or more: 1..count."""
    cdef int n = _threads
    if n <= 1 or work < 2.0 * grain:
        return 1
    if work < n * grain:
        return <int>(work / grain)
    return n


cdef int blas_serial() noexcept nogil:
    """Make BLAS single-threaded; returns the count to hand back to blas_restore (0: nothing
    was changed)."""
    cdef int previous
    if _blas_get == NULL or _blas_set == NULL:
        return 0
    previous = _blas_get()
    if previous <= 1:
        return 0
    _blas_set(1)
    return previous


cdef void blas_restore(int previous) noexcept nogil:
    if previous > 1 and _blas_set != NULL:
        _blas_set(previous)


def _set_count(int n):
    """The kernels' thread count (headrace.runtime.threads.set_num_threads validates it)."""
    global _threads
    _threads = n if n > 1 else 1


def _get_count():
    return _threads


def _bind_blas(uintptr_t set_address, uintptr_t get_address):
    """The BLAS library's set/get thread-count functions, as addresses (0, 0: none)."""
    global _blas_set, _blas_get
    _blas_set = <set_fn>set_address
    _blas_get = <get_fn>get_address


def _team_size(int n):
    """How many threads an OpenMP region asked for ``n`` runs on (1 in a build without OpenMP):
    the tests' check that the kernels were compiled with it."""
    cdef int seen[256]
    cdef int i, most = 0
    n = min(max(n, 1), 256)
    for i in range(n):
        seen[i] = 0
    with nogil, parallel(num_threads=n):
        seen[threadid()] = 1
    for i in range(n):
        most += seen[i]
    return most


def _blas_serial_probe():
    """(BLAS threads inside blas_serial, after blas_restore): for the tests."""
    cdef int previous = blas_serial()
    cdef int inside = _blas_get() if _blas_get != NULL else 0
    blas_restore(previous)
    return inside, _blas_get() if _blas_get != NULL else 0
