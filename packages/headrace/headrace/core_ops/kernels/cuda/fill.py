"""Constant tensors on CUDA: fill_constant, fill_zeros_like, fill_any_like.

As on the CPU every call returns a fresh device array (the output may be an optimizer state
that later ops update in place), filled by one launch with one thread per element; the value is
converted and checked once in the maker (headrace.kernels.scalars.checked_scalar), exactly as
the CPU kernel does.

Host reads (the documented exceptions): a shape given by ShapeTensor/ShapeTensorList is read
back, since the output's size must be known on the host to allocate it (the CPU kernel reads
them as values too). A ValueTensor is not read: the kernel converts its one element on the
device, and a value an integer dtype cannot hold (NaN, inf, out of range) is recorded in a
one-element device flag and raised as the CPU kernel's ValueError when the run's flags are read.
"""
import numpy as np
from numba import cuda

from headrace.devices.cuda import to_host
from headrace.kernels.cuda_launch import (device_empty, device_fill, empty_like, flat,
                                          launch, new_flag, check_flag)
from headrace.kernels.scalars import checked_scalar

from ..host.assign import each_tensor
from ..host.fill import ALL_DTYPES, constant_attrs, out_dtype, output_shape


def int_values(t, op, slot):
    """The integers held by an int tensor (a shape: read back to the host, see above)."""
    if str(t.dtype) not in ("int32", "int64", "int8", "int16", "uint8"):
        raise TypeError(f"{op}: input '{slot}' must hold integers (int32/int64), got "
                        f"{t.dtype}")
    return [int(v) for v in np.asarray(to_host(t)).reshape(-1)]


@cuda.jit
def _fill_from(out, v, flag, kind, lo, hi):
    """out[:] = v[0] converted to out's type; kind 0: a float/complex, 1: an integer (NaN, inf
    or out of [lo, hi] is flagged), 2: bool (nonzero, NaN included, is true)."""
    i = cuda.grid(1)
    if i < out.size:
        val = v[0]
        if kind == 2:
            out[i] = val != 0
        elif kind == 1:
            if not (val >= lo and val <= hi):
                cuda.atomic.min(flag, 0, 0)
                out[i] = 0
            else:
                out[i] = val
        else:
            out[i] = val


class FillConstant:
    """Out = shape (attribute, ShapeTensor or ShapeTensorList) filled with the value
    (attribute value/str_value, or ValueTensor) in the dtype attribute's type."""

    def __init__(self, attrs, info=None):
        self.info = info
        self.dtype, self.shape, self.value = constant_attrs(attrs, "CUDA")
        self.unused_flag = None

    def __call__(self, shape_tensor=None, shape_list=None, value_tensor=None):
        shape = output_shape(shape_tensor, shape_list, self.shape, int_values)
        out = device_empty(shape, self.dtype)
        if value_tensor is None:
            return (device_fill(out, self.value),)
        if value_tensor.size != 1 or np.dtype(value_tensor.dtype).kind not in "biuf":
            raise ValueError(f"fill_constant: ValueTensor must hold one number, got "
                             f"{value_tensor.dtype} of shape {list(value_tensor.shape)}")
        self._from_tensor(out, flat(value_tensor))
        return (out,)

    def _from_tensor(self, out, v):
        kind = self.dtype.kind
        if kind not in "iu":
            # Nothing to check: a flag the kernel never writes, made once (no run's slot).
            if self.unused_flag is None:
                self.unused_flag = device_empty((1,), np.int64)
            launch(_fill_from, out.size, flat(out), v, self.unused_flag,
                   2 if kind == "b" else 0, 0.0, 0.0)
            return
        lim = np.iinfo(self.dtype)
        flag = new_flag(1)
        launch(_fill_from, out.size, flat(out), v, flag, 1, float(lim.min), float(lim.max))
        name = self.dtype.name

        def report(_pos):
            return ValueError(f"fill_constant: the value of ValueTensor cannot be stored in "
                              f"{name} (not finite, or out of [{lim.min}, {lim.max}])")
        if out.size:
            check_flag(flag, 1, report, self.info)


def _zeros_of(x):
    if not hasattr(x, "copy_to_host") or isinstance(x, np.ndarray):
        raise TypeError(f"fill_zeros_like: X must be a tensor or a tensor array, got "
                        f"{type(x).__name__}")
    return device_fill(empty_like(x), np.dtype(x.dtype).type(0))


class FillZerosLike:
    """Out = zeros with X's shape and dtype; a tensor array gives an array of zero tensors
    (same shapes, dtypes and LoDs); X without a value gives none."""

    def __init__(self, attrs, info=None):
        pass

    def __call__(self, x):
        if x is None:
            # A value that never existed (a branch that did not run) has no gradient either.
            return (None,)
        if isinstance(x, list):
            return (each_tensor(x, _zeros_of),)
        return (_zeros_of(x),)


class FillAnyLike:
    """Out = value in X's shape, in the dtype attribute's type (X's when -1)."""

    def __init__(self, attrs, info=None):
        self.code = attrs["dtype"]
        self.value = attrs["value"]

    def __call__(self, x):
        if not hasattr(x, "copy_to_host") or isinstance(x, np.ndarray):
            raise TypeError(f"fill_any_like: X must be a tensor, got {type(x).__name__}")
        dtype = np.dtype(x.dtype) if self.code == -1 else \
            out_dtype(self.code, "fill_any_like", "CUDA")
        out = device_empty(x.shape, dtype)
        return (device_fill(out, checked_scalar(self.value, dtype, "fill_any_like")),)


KERNELS = [
    ("fill_constant", FillConstant, None),
    ("fill_zeros_like", FillZerosLike, ALL_DTYPES),
    ("fill_any_like", FillAnyLike, ALL_DTYPES),
]
