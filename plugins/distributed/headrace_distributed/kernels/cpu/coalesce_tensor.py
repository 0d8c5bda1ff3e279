"""CPU kernel of coalesce_tensor: one flat buffer, each tensor copied to its aligned offset."""
import numpy as np

from headrace.dtypes import from_proto
from headrace_distributed.ops.coalesce_tensor import aligned_numel


class Coalesce:
    def __init__(self, attrs, info=None):
        self.dtype = np.dtype(from_proto(attrs["dtype"]))
        self.copy = attrs["copy_data"]
        self.constant = attrs["constant"] if attrs["set_constant"] else None
        self.use_align, self.align_size = attrs["use_align"], attrs["align_size"]
        size = attrs["user_defined_size_of_dtype"]
        if size not in (-1, self.dtype.itemsize):
            raise ValueError(f"coalesce_tensor: user_defined_size_of_dtype={size} differs from "
                             f"{self.dtype}'s size {self.dtype.itemsize}")
        if attrs["concated_shapes"] or attrs["concated_ranks"]:
            raise ValueError("coalesce_tensor: concated_shapes/concated_ranks (Paddle's "
                             "shape-only mode) are not supported: bind Input instead")
        self.alias = info is None or info.may_alias("Input", "Output")

    def __call__(self, inputs):
        for i, x in enumerate(inputs):
            if x.dtype != self.dtype:
                raise TypeError(f"coalesce_tensor: Input #{i} is {x.dtype}, the dtype attribute "
                                f"says {self.dtype}")
        sizes = [aligned_numel(x.size, self.dtype.itemsize, self.use_align, self.align_size)
                 for x in inputs]
        fused = np.zeros(sum(sizes), self.dtype)
        if self.constant is not None:
            fused[...] = self.constant
            outputs = [np.full(x.shape, self.constant, self.dtype) for x in inputs]
            return outputs, fused
        if self.copy:
            offset = 0
            for x, n in zip(inputs, sizes):
                fused[offset:offset + x.size] = x.reshape(-1)
                offset += n
        outputs = [x if self.alias else np.array(x) for x in inputs]
        return outputs, fused


KERNELS = [("coalesce_tensor", Coalesce, ("float32", "float64"))]
