# The thread setting every CPU kernel reads (hr.set_num_threads; headrace.runtime.threads is its
# Python side). One C-level copy lives in headrace.kernels.threads; a plugin's module cimports
# these functions and Cython binds them at import through the module's C-API capsule, so every
# plugin sees the same count.
cdef int num_threads() noexcept nogil
cdef int threads_for(double work, double grain) noexcept nogil

cdef enum:
    # Multiply-adds a thread before a GEMM is split (~20 us at one core's ~45 GMAC/s, far
    # above a fork and join's few us).
    GEMM_GRAIN = 1 << 20
    # Values a thread before a memory-bound loop (elementwise, batch_norm, pooling) is split:
    # 32K float32 are ~10 us of streaming at one core's ~13 GB/s.
    ELEMENT_GRAIN = 1 << 15


cdef inline Py_ssize_t split_at(Py_ssize_t n, int t, int nt) noexcept nogil:
    """Where thread t of nt starts on n values (t = nt: n): shares of whole 16-value blocks
    (a float32 cache line), so no two threads write one line."""
    if t >= nt:
        return n
    return (n * t // nt) & ~(<Py_ssize_t>15)
