"""Cython CPU kernels; each module lists ``KERNELS = [(op_type, maker, dtypes), ...]``."""
# The kernels run their BLAS products on headrace's own threads (hr.set_num_threads): SciPy's
# OpenBLAS keeps one thread of its own, so no second pool spins beside OpenMP's.
from headrace.runtime.threads import bind_blas

bind_blas()
