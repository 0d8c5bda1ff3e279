"""fill_constant_batch_size_like on CUDA: a LoD kernel, since with LoD the batch size is the
number of sequences (Paddle's rule for input_dim_idx 0), not of rows. Only Input's shape and
LoD (host metadata) are read; the output is filled on the device, one thread per element."""
import numpy as np

from headrace import dtypes as _dt
from headrace.kernels.cuda_launch import device_empty, device_fill
from headrace.kernels.scalars import checked_scalar

OP = "fill_constant_batch_size_like"


def parse_str_value(text, dtype):
    """str_value as Paddle reads it: exact for an integer dtype, else a double."""
    s = text.strip()
    if dtype.kind in "iu":
        try:
            return int(s)
        except ValueError:
            pass
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"{OP}: attribute 'str_value' {text!r} is not a number") from None


class FillConstantBatchSizeLike:
    def __init__(self, attrs, info=None):
        name = _dt.from_proto(attrs["dtype"])
        try:
            self.dtype = np.dtype(name)
        except TypeError:
            raise TypeError(f"{OP}: dtype {attrs['dtype']} ({name}) has no CUDA kernel") \
                from None
        text = attrs.get("str_value", "")
        raw = parse_str_value(text, self.dtype) if text else attrs["value"]
        self.value = checked_scalar(raw, self.dtype, OP)
        self.shape = [int(d) for d in attrs["shape"]]
        self.in_idx, self.out_idx = attrs["input_dim_idx"], attrs["output_dim_idx"]

    def __call__(self, ref):
        dims = ref.data.shape
        if not 0 <= self.in_idx < len(dims):
            raise ValueError(f"{OP}: input_dim_idx {self.in_idx} is not a dim of Input, shape "
                             f"{list(dims)}")
        if ref.lod and self.in_idx == 0:
            batch = len(ref.lod[-1]) - 1
        else:
            batch = dims[self.in_idx]
        shape = list(self.shape)
        shape[self.out_idx] = batch
        if any(d < 0 for d in shape):
            raise ValueError(f"{OP}: the output shape {shape} has an unknown dim besides "
                             f"output_dim_idx")
        return (device_fill(device_empty(shape, self.dtype), self.value),)


KERNELS = [("fill_constant_batch_size_like", FillConstantBatchSizeLike, None, "lod")]
