"""fill_constant_batch_size_like on CUDA: a LoD kernel, since with LoD the batch size is the
number of sequences (Paddle's rule for input_dim_idx 0), not of rows. Only Input's shape and
LoD (host metadata) are read, by the CPU kernel's host logic
(kernels/host/fill_constant_batch_size_like.py); the output is filled on the device, one
thread per element."""
from headrace.kernels.cuda_launch import device_empty, device_fill

from ..host.fill_constant_batch_size_like import BatchSizeLike


class FillConstantBatchSizeLike(BatchSizeLike):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, "CUDA")

    def __call__(self, ref):
        return (device_fill(device_empty(self.out_shape(ref), self.dtype), self.value),)


KERNELS = [("fill_constant_batch_size_like", FillConstantBatchSizeLike, None, "lod")]
