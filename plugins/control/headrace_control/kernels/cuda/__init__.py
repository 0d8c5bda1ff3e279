"""Numba CUDA kernels of the control plugin (issue 11), mirror-named with kernels/cpu."""
