"""Numba CUDA kernels of the tensor ops (issue 11), mirror-named with kernels/cpu."""
