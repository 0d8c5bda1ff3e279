"""increment on CUDA: Out = X + step for a one-element counter, in X's dtype, by a one-thread
kernel: the counter stays on the device (a loop condition that needs it reads it there)."""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import empty_like, launch

DTYPES = ("int32", "int64", "float32", "float64")


@cuda.jit
def _increment(x, out, step):
    if cuda.grid(1) == 0:
        out[0] = x[0] + step


class Increment:
    def __init__(self, attrs, info=None):
        self.step = attrs["step"]

    def __call__(self, x):
        if x.size != 1:
            raise ValueError(f"increment: X must hold one element, found shape "
                             f"{list(x.shape)}")
        dtype = np.dtype(x.dtype)
        if dtype.name not in DTYPES:
            raise TypeError(f"increment: X has dtype {dtype}; expected one of {DTYPES}")
        # step in X's type, truncated toward zero for integers (the CPU kernel's C cast).
        step = dtype.type(int(self.step)) if dtype.kind == "i" else dtype.type(self.step)
        out = empty_like(x)
        launch(_increment, 1, x.reshape(1), out.reshape(1), step)
        return (out,)


KERNELS = [("increment", Increment, DTYPES)]
