"""Kernels of the nn family, per device: cpu/ (Cython) and cuda/ (Numba CUDA)."""
