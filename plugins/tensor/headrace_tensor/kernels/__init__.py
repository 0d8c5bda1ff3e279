"""Kernels of the tensor family, per device: cpu/ (Cython) and cuda/ (Numba CUDA)."""
