# cython: language_level=3
"""The kernels' thread count (C level).

``threads_for(work, grain)`` is what a kernel asks before a parallel loop: 1 (stay serial)
unless there is at least ``grain`` of work per thread, so small ops never pay OpenMP's fork and
join. The Python side (``headrace.runtime.threads``) sets the count.
"""
from cython.parallel cimport parallel, threadid

cdef int _threads = 1


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


def _set_count(int n):
    """The kernels' thread count (headrace.runtime.threads.set_num_threads validates it)."""
    global _threads
    _threads = n if n > 1 else 1


def _get_count():
    return _threads


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
