"""pad and pad_grad on CUDA: pad fills a new array with pad_value (one thread per element) and
copies X into its middle (one strided-copy launch); pad_grad copies the middle of Out@GRAD
out (one launch)."""
import numpy as np

from headrace.kernels.cuda_launch import device_empty, device_fill
from headrace.kernels.cuda_strided import contiguous_strides, strided_copy

from ._common import dense

PAD_DTYPES = ("float32", "float64", "int32", "int64", "complex64", "complex128")
GRAD_DTYPES = ("float32", "float64")


def checked(x, op, slot, dtypes):
    dense(x, op, slot)
    if str(x.dtype) not in dtypes:
        raise TypeError(f"{op}: {slot} has dtype {x.dtype}; supported: {', '.join(dtypes)}")
    return x


def middle(paddings, shape, op, slot):
    """(element offset, dims) of the unpadded part of a padded tensor of ``shape``."""
    if len(paddings) != 2 * len(shape):
        raise ValueError(f"{op}: {len(paddings)} paddings {paddings} for a {slot} of rank "
                         f"{len(shape)} (two per dim)")
    if any(p < 0 for p in paddings):
        raise ValueError(f"{op}: paddings {paddings} must all be >= 0")
    strides = contiguous_strides(shape)
    offset = sum(paddings[2 * i] * s for i, s in enumerate(strides))
    dims = tuple(n - paddings[2 * i] - paddings[2 * i + 1] for i, n in enumerate(shape))
    return offset, dims, strides


class Pad:
    """pad: (X,) -> (Out,)."""

    def __init__(self, attrs, info=None):
        self.paddings = [int(p) for p in attrs["paddings"]]
        self.value = attrs.get("pad_value", 0.0)

    def __call__(self, x):
        a = checked(x, "pad", "X", PAD_DTYPES)
        nd = len(a.shape)
        if len(self.paddings) != 2 * nd:
            raise ValueError(f"pad: {len(self.paddings)} paddings {self.paddings} for an X of "
                             f"rank {nd} (two per dim)")
        shape = tuple(n + self.paddings[2 * i] + self.paddings[2 * i + 1]
                      for i, n in enumerate(a.shape))
        value = self.value
        dtype = np.dtype(a.dtype)
        if dtype.kind == "i":
            info = np.iinfo(dtype)
            if not (info.min <= value <= info.max):      # (NaN fails too)
                raise ValueError(f"pad: pad_value {value} does not fit X's dtype {dtype.name}")
            value = int(value)                            # toward zero, as C's cast
        out = device_fill(device_empty(shape, dtype), dtype.type(value))
        offset, dims, strides = middle(self.paddings, shape, "pad", "X")
        return (strided_copy(a, out, dims, contiguous_strides(dims), strides,
                             dst_offset=offset),)


class PadGrad:
    """pad_grad: (Out@GRAD,) -> (X@GRAD,)."""

    def __init__(self, attrs, info=None):
        self.paddings = [int(p) for p in attrs["paddings"]]

    def __call__(self, dout):
        g = checked(dout, "pad_grad", "Out@GRAD", GRAD_DTYPES)
        offset, dims, strides = middle(self.paddings, tuple(g.shape), "pad_grad", "Out@GRAD")
        for i in range(len(dims)):
            if dims[i] < 0:
                raise ValueError(f"pad_grad: Out@GRAD {list(g.shape)} is smaller than the "
                                 f"paddings {self.paddings} along dim {i}")
        out = device_empty(dims, g.dtype)
        return (strided_copy(g, out, dims, strides, contiguous_strides(dims),
                             src_offset=offset),)


KERNELS = [("pad", Pad, PAD_DTYPES), ("pad_grad", PadGrad, GRAD_DTYPES)]
