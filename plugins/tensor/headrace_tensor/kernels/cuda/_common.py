"""Helpers of this plugin's CUDA kernels (the ones every plugin shares are in
headrace.kernels.cuda_launch and headrace.kernels.cuda_strided)."""
import numpy as np
from numba import cuda

from headrace.devices.cuda import current_stream, is_array

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")
GRAD_DTYPES = ("float32", "float64")


def dense(x, op, slot):
    """``x`` if it is a device array; anything else (a tensor array, a host array, None) is a
    TypeError naming the op and slot."""
    if not is_array(x):
        raise TypeError(f"{op}: input '{slot}' must be a dense tensor (a device array on "
                        f"CUDA), got {type(x).__name__}")
    return x


def host_ints(t, op, slot):
    """The integers held by an int tensor (shape metadata given as a tensor: the documented
    exception to "values stay on the device", read as the CPU kernel reads them)."""
    a = t.copy_to_host() if is_array(t) else np.asarray(t)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: input '{slot}' must hold integers (int32/int64), got "
                        f"{a.dtype.name}")
    return [int(v) for v in a.reshape(-1)]


def one_int(t, op, slot):
    vals = host_ints(t, op, slot)
    if len(vals) != 1:
        raise ValueError(f"{op}: input '{slot}' must hold exactly one element, got "
                         f"{len(vals)}")
    return vals[0]


def ints_of_list(ts, op, slot):
    return [one_int(t, op, f"{slot}[{i}]") for i, t in enumerate(ts)]


def norm_axis(axis, rank, op, what="axis"):
    if not -rank <= axis < rank:
        raise IndexError(f"{op}: {what} {axis} is out of range for rank {rank} (valid: "
                         f"{-rank}..{rank - 1})")
    return axis + rank if axis < 0 else axis


def xshape_of(x):
    """The XShape placeholder: shape [0] + X.dims, X's dtype, no data."""
    return cuda.device_array((0,) + tuple(x.shape), dtype=x.dtype, stream=current_stream())


def prod(dims):
    n = 1
    for d in dims:
        n *= int(d)
    return n
