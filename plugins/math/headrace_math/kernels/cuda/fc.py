"""fc on CUDA: Out = act(Input @ W + Bias), as kernels/cpu/fc.pyx: one launch of the core's
tiled GEMM (headrace.kernels.cuda_gemm.gemm) into Out, then one elementwise launch that adds
the bias and applies the activation. Inputs are C-contiguous device arrays."""
import math

from numba import cuda

from headrace.kernels.cuda_gemm import gemm
from headrace.kernels.cuda_launch import device_empty, flat, launch

DTYPES = ("float32", "float64")


@cuda.jit
def _bias_act(out, bias, n_cols, has_bias, relu, total):
    i = cuda.grid(1)
    if i < total:
        v = out[i]
        if has_bias:
            v += bias[i % n_cols]
        if relu and v < 0:
            v = 0
        out[i] = v


class FC:
    def __init__(self, attrs, info=None):
        self.n = attrs["in_num_col_dims"]
        self.relu = attrs["activation_type"] == "relu"

    def __call__(self, x, w, bias):
        if x.dtype != w.dtype or (bias is not None and bias.dtype != x.dtype) or \
                str(x.dtype) not in DTYPES:
            raise TypeError(f"fc: Input, W and Bias must share float32 or float64, got "
                            f"{x.dtype}, {w.dtype} and "
                            f"{'none' if bias is None else bias.dtype}")
        xs, ws = tuple(x.shape), tuple(w.shape)
        if not 0 < self.n < len(xs) or len(ws) != 2:
            raise ValueError(f"fc: in_num_col_dims={self.n} does not fit Input{list(xs)}, or "
                             f"W{list(ws)} is not a matrix")
        M, K, N = math.prod(xs[:self.n]), math.prod(xs[self.n:]), ws[1]
        if K != ws[0]:
            raise ValueError(f"fc: Input{list(xs)} flattens to [{M}, {K}] but W is {list(ws)}")
        if bias is not None and bias.size != N:
            raise ValueError(f"fc: Bias{list(bias.shape)} does not hold one value per output "
                             f"column ({N})")
        out = device_empty(xs[:self.n] + (N,), x.dtype)
        gemm(x, w, out, M, N, K)     # an empty contraction (K = 0) writes zeros
        if bias is not None or self.relu:
            b = flat(bias) if bias is not None else flat(out)   # unread without a bias
            launch(_bias_act, out.size, flat(out), b, N, bias is not None, self.relu,
                   out.size)
        return (out,)


KERNELS = [("fc", FC, DTYPES)]
