"""Kernels of the math family, per device: cpu/ (Cython) and cuda/ (Numba CUDA)."""
