"""Numba CUDA kernels of the nn plugin (issue 11), mirror-named with kernels/cpu."""
