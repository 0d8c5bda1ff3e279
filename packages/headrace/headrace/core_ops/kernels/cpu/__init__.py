"""Cython CPU kernels of the core's ops; each module lists ``KERNELS = [(op_type, maker,
dtypes), ...]``."""
