"""scale on CUDA: Out = scale * X + bias (bias_after_scale) or scale * (X + bias), one thread
per element.

Integer X (loop counters in programs Paddle writes) computes in its own type with scale and
bias converted to it first, truncating toward zero, as the CPU kernel does."""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import empty_like, flat, launch

DTYPES = ("float32", "float64", "int32", "int64")


@cuda.jit
def _scale(x, out, s, b, after):
    i = cuda.grid(1)
    if i < out.size:
        if after:
            out[i] = s * x[i] + b
        else:
            out[i] = s * (x[i] + b)


class Scale:
    def __init__(self, attrs, info=None):
        self.s = float(attrs["scale"])
        self.b = float(attrs["bias"])
        self.after = bool(attrs["bias_after_scale"])

    def __call__(self, x):
        dtype = np.dtype(x.dtype)
        if dtype.name not in DTYPES:
            raise TypeError(f"scale: X has dtype {dtype}, expected float32, float64, int32 "
                            f"or int64")
        # Scale and bias in X's type (int() truncates toward zero, as the CPU kernel's cast).
        conv = (lambda v: dtype.type(int(v))) if dtype.kind == "i" else dtype.type
        out = empty_like(x)
        launch(_scale, out.size, flat(x), flat(out), conv(self.s), conv(self.b), self.after)
        return (out,)


KERNELS = [("scale", Scale, DTYPES)]
