# cython: language_level=3
"""fill_constant_batch_size_like: a LoD kernel, since with LoD the batch size is the number of
sequences (Paddle's rule for input_dim_idx 0), not of rows."""
cimport numpy as cnp

import numpy as np

from headrace import dtypes as _dt
from headrace.kernels.scalars import checked_scalar

cnp.import_array()

OP = "fill_constant_batch_size_like"


cdef object parse_str_value(str text, object dtype):
    """str_value as Paddle reads it: exact for an integer dtype (an int64 beyond 2**53 stays
    exact), else a double ("inf", "-1e-30")."""
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


cdef class FillConstantBatchSizeLike:
    cdef object dtype, value
    cdef list shape
    cdef int in_idx, out_idx

    def __init__(self, dict attrs, info=None):
        name = _dt.from_proto(attrs["dtype"])
        try:
            self.dtype = np.dtype(name)
        except TypeError:
            raise TypeError(f"{OP}: dtype {attrs['dtype']} ({name}) has no CPU kernel") from None
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
        return (np.full(shape, self.value, self.dtype),)


KERNELS = [("fill_constant_batch_size_like", FillConstantBatchSizeLike, None, "lod")]
