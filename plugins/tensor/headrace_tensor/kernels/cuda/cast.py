"""cast on CUDA: Out = X converted element-wise to out_dtype, C-style, one thread per element.

As the CPU kernel: a float becomes an integer by truncation toward zero, anything becomes bool
as ``x != 0`` (NaN included: true), bool reads as 0/1; a NaN or out-of-range float cast to an
integer gives an unspecified value (never a crash). The source type is X's actual dtype, and
the result is always a new array, even when the types are equal.
"""
import numpy as np
from numba import cuda

from headrace import dtypes as _dt
from headrace.kernels.cuda_launch import copy_into, device_empty, flat, launch

from ._common import dense

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


@cuda.jit
def _to_bool(x, out):
    # A kernel of its own: a float16 -> bool store is invalid NVVM IR, the comparison is not.
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] != 0


class Cast:
    def __init__(self, attrs, info=None):
        name = _dt.from_proto(attrs["out_dtype"])
        if name not in DTYPES:
            raise TypeError(f"cast: out_dtype {attrs['out_dtype']} ({name}) has no CUDA "
                            f"kernel; supported: {', '.join(DTYPES)}")
        self.out_dtype = np.dtype(_dt.to_numpy(name))

    def __call__(self, x):
        a = dense(x, "cast", "X")
        if str(a.dtype) not in DTYPES:
            raise TypeError(f"cast: X has dtype {a.dtype}; supported: {', '.join(DTYPES)}")
        out = device_empty(a.shape, self.out_dtype)
        if self.out_dtype == np.bool_:
            launch(_to_bool, out.size, flat(a), flat(out))
            return (out,)
        return (copy_into(a, out),)


KERNELS = [("cast", Cast, DTYPES)]
