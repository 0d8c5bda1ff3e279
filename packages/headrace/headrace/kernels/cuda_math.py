"""Scalar device functions shared by every plugin's Numba CUDA kernels (imported only by CUDA
kernel modules, which need numba anyway)."""
import math

from numba import cuda

__all__ = ["sigmoid"]


@cuda.jit(device=True)
def sigmoid(v):
    """1 / (1 + exp(-v)), split on the sign so exp never overflows, as the CPU kernels do."""
    if v >= 0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)
    return e / (1.0 + e)
