# cython: language_level=3
"""fill_constant_batch_size_like: a LoD kernel, since with LoD the batch size is the number of
sequences (Paddle's rule for input_dim_idx 0), not of rows."""
cimport numpy as cnp

import numpy as np

from headrace import dtypes as _dt
from headrace.kernels.scalars import checked_scalar

cnp.import_array()


cdef class FillConstantBatchSizeLike:
    cdef object dtype, value
    cdef list shape
    cdef int in_idx, out_idx

    def __init__(self, dict attrs, info=None):
        self.dtype = np.dtype(_dt.from_proto(attrs["dtype"]))
        text = attrs.get("str_value", "")
        raw = float(text) if text else attrs["value"]
        self.value = checked_scalar(raw, self.dtype, "fill_constant_batch_size_like")
        self.shape = [int(d) for d in attrs["shape"]]
        self.in_idx, self.out_idx = attrs["input_dim_idx"], attrs["output_dim_idx"]

    def __call__(self, ref):
        dims = ref.data.shape
        if not 0 <= self.in_idx < len(dims):
            raise ValueError(f"fill_constant_batch_size_like: input_dim_idx {self.in_idx} is "
                             f"not a dim of Input, shape {list(dims)}")
        if ref.lod and self.in_idx == 0:
            batch = len(ref.lod[-1]) - 1
        else:
            batch = dims[self.in_idx]
        shape = list(self.shape)
        shape[self.out_idx] = batch
        if any(d < 0 for d in shape):
            raise ValueError(f"fill_constant_batch_size_like: the output shape {shape} has an "
                             f"unknown dim besides output_dim_idx")
        return (np.full(shape, self.value, self.dtype),)


KERNELS = [("fill_constant_batch_size_like", FillConstantBatchSizeLike, None, "lod")]
