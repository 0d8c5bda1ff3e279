"""Numba CUDA kernels of the optim ops (issue 11), mirror-named with kernels/cpu."""
