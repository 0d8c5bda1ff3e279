# The thread setting every CPU kernel reads (hr.set_num_threads; headrace.runtime.threads is its
# Python side). One C-level copy lives in headrace.kernels.threads; a plugin's module cimports
# these functions and Cython binds them at import through the module's C-API capsule, so every
# plugin sees the same count.
cdef int num_threads() noexcept nogil
cdef int threads_for(double work, double grain) noexcept nogil
cdef int blas_serial() noexcept nogil
cdef void blas_restore(int previous) noexcept nogil
