"""fused_conv2d_add_act on CUDA: conv2d's kernel (kernels/cuda/conv.py: Bias and ResidualData
prefilled, im2col + the shared GEMM accumulating), then one elementwise launch applying the
activation in place over Output, as the CPU kernel (kernels/cpu/fused_conv.pyx)."""
from numba import cuda

from headrace.kernels.cuda_launch import flat, launch

from .conv import Conv2D

DTYPES = ("float32", "float64")


@cuda.jit
def _relu(out):
    """relu in place, as the CPU: 0 where out < 0 (NaN and -0.0 pass through)."""
    e = cuda.grid(1)
    if e < out.size and out[e] < 0:
        out[e] = 0


class FusedConv2DAddAct:
    def __init__(self, attrs, info=None):
        self.conv = Conv2D(attrs, info)
        self.conv.name = "fused_conv2d_add_act"
        self.relu = attrs["activation"] == "relu"

    def __call__(self, input, filter, bias, residual=None):
        if bias is None:
            raise ValueError("fused_conv2d_add_act: Bias is required (one value per output "
                             "channel)")
        (out,) = self.conv(input, filter, bias, residual)
        if self.relu and out.size:
            launch(_relu, out.size, flat(out))
        return (out, [])


KERNELS = [("fused_conv2d_add_act", FusedConv2DAddAct, DTYPES)]
