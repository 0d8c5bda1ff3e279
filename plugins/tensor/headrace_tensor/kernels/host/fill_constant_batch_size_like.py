"""fill_constant_batch_size_like host logic shared by the CPU and CUDA kernels: the dtype and
value attributes (converted and checked once, when the kernel is made) and the output shape
from Input's shape and LoD (with LoD the batch size is the number of sequences, Paddle's rule
for input_dim_idx 0)."""
import numpy as np

from headrace import dtypes as _dt
from headrace.kernels.scalars import checked_scalar, parse_str_value

OP = "fill_constant_batch_size_like"


class BatchSizeLike:
    """The attributes of one op; ``device`` ("CPU" or "CUDA") names the kernel in the error
    for a dtype NumPy cannot hold."""

    def __init__(self, attrs, device):
        name = _dt.from_proto(attrs["dtype"])
        try:
            self.dtype = np.dtype(name)
        except TypeError:
            raise TypeError(f"{OP}: dtype {attrs['dtype']} ({name}) has no {device} "
                            f"kernel") from None
        text = attrs.get("str_value", "")
        raw = parse_str_value(text, self.dtype, OP, "attribute 'str_value'") if text \
            else attrs["value"]
        self.value = checked_scalar(raw, self.dtype, OP)
        self.shape = [int(d) for d in attrs["shape"]]
        self.in_idx, self.out_idx = attrs["input_dim_idx"], attrs["output_dim_idx"]

    def out_shape(self, ref):
        """The output shape for the LoD tensor ``ref`` (Input)."""
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
        return shape
