"""mul on CUDA: a shared-memory tiled matrix product of X and Y flattened to 2-D."""
import math

import numpy as np
from numba import cuda, float32, float64

from headrace.devices.cuda import current_stream   # the running executor's stream

TILE = 16


def _make_kernel(dtype):
    @cuda.jit
    def k(a, b, c, M, N, K):
        sa = cuda.shared.array((TILE, TILE), dtype)
        sb = cuda.shared.array((TILE, TILE), dtype)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * TILE + ty
        col = cuda.blockIdx.x * TILE + tx
        acc = dtype(0)
        for t in range((K + TILE - 1) // TILE):
            kk = t * TILE
            sa[ty, tx] = a[row, kk + tx] if row < M and kk + tx < K else dtype(0)
            sb[ty, tx] = b[kk + ty, col] if col < N and kk + ty < K else dtype(0)
            cuda.syncthreads()
            for j in range(TILE):
                acc += sa[ty, j] * sb[j, tx]
            cuda.syncthreads()
        if row < M and col < N:
            c[row, col] = acc
    return k


_KERNELS = {}


def _kernel(dtype):
    key = np.dtype(dtype).name
    if key not in _KERNELS:
        _KERNELS[key] = _make_kernel(float32 if key == "float32" else float64)
    return _KERNELS[key]


class Mul:
    def __init__(self, attrs, info=None):
        self.xn, self.yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]

    def __call__(self, x, y):
        if x.dtype != y.dtype or np.dtype(x.dtype).name not in ("float32", "float64"):
            raise TypeError(f"mul: X and Y must both be float32 or float64, got "
                            f"{x.dtype} and {y.dtype}")
        xs, ys = tuple(x.shape), tuple(y.shape)
        if not 0 < self.xn < len(xs) or not 0 < self.yn < len(ys):
            raise ValueError(f"mul: x_num_col_dims={self.xn} / y_num_col_dims={self.yn} do not "
                             f"fit X{list(xs)} / Y{list(ys)}")
        M, K = math.prod(xs[:self.xn]), math.prod(xs[self.xn:])
        K2, N = math.prod(ys[:self.yn]), math.prod(ys[self.yn:])
        if K != K2:
            raise ValueError(f"mul: X{list(xs)} flattens to [{M}, {K}] but Y{list(ys)} "
                             f"flattens to [{K2}, {N}]")
        out = cuda.device_array((M, N), dtype=x.dtype)
        if M and N:
            grid = ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE)
            _kernel(x.dtype)[grid, (TILE, TILE), current_stream()](
                x.reshape(M, K), y.reshape(K, N), out, M, N, K)
        return (out.reshape(xs[:self.xn] + ys[self.yn:]),)


KERNELS = [("mul", Mul, ("float32", "float64"))]
