"""Cython CPU kernels; each module lists ``KERNELS = [(op_type, maker, dtypes), ...]``."""
