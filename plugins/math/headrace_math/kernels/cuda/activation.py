"""relu on CUDA (the device-seam proof; the full CUDA backend comes later)."""
from numba import cuda

from headrace.devices.cuda import current_stream   # the running executor's stream

from ._launch import grid


@cuda.jit
def _relu(x, out):
    i = cuda.grid(1)
    if i < out.size:
        v = x[i]
        out[i] = v if v > 0 else v * 0


class Relu:
    def __init__(self, attrs, info=None):
        pass

    def __call__(self, x):
        out = cuda.device_array(x.shape, dtype=x.dtype)
        if out.size:
            blocks, threads = grid(out.size)
            _relu[blocks, threads, current_stream()](x.reshape(-1), out.reshape(-1))
        return (out,)


KERNELS = [("relu", Relu, ("float32", "float64"))]
