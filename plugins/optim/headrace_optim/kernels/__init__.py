"""Kernels of the optim family, per device: cpu/ (Cython) and cuda/ (Numba CUDA)."""
