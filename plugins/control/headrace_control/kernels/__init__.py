"""Kernels of the control family, per device: cpu/ (Cython) and cuda/ (Numba CUDA)."""
