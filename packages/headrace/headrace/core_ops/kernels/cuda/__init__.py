"""Numba CUDA kernels of the core ops (issue 11), mirror-named with kernels/cpu."""
