"""Numba CUDA kernels; imported only when a CUDAPlace is first used. Each module lists
``KERNELS = [(op_type, maker, dtypes), ...]`` as the CPU modules do."""
