# cython: language_level=3
"""fill_constant_batch_size_like: a LoD kernel, since with LoD the batch size is the number of
sequences (Paddle's rule for input_dim_idx 0), not of rows. The attributes and the output
shape: kernels/host/fill_constant_batch_size_like.py (shared with the CUDA kernel)."""
import numpy as np

from ..host.fill_constant_batch_size_like import BatchSizeLike


class FillConstantBatchSizeLike(BatchSizeLike):
    def __init__(self, dict attrs, info=None):
        super().__init__(attrs, "CPU")

    def __call__(self, ref):
        return (np.full(self.out_shape(ref), self.value, self.dtype),)


KERNELS = [("fill_constant_batch_size_like", FillConstantBatchSizeLike, None, "lod")]
