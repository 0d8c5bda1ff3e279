"""sequence_mask's host logic, one copy for kernels/cpu/sequence_mask.pyx and
kernels/cuda/sequence_mask.py: the attributes, and the width a MaxLenTensor gives."""
import numpy as np

from headrace import dtypes as _dt

__all__ = ["MaskAttrs", "tensor_width"]


class MaskAttrs:
    """maxlen (-1: the longest length) and Y's dtype."""

    def __init__(self, attrs):
        self.maxlen = attrs["maxlen"]
        self.dtype = np.dtype(_dt.from_proto(attrs["out_dtype"]))


def tensor_width(m):
    """Y's width from MaxLenTensor's values ``m`` (a host array), refused unless it is one
    positive int."""
    m = m.reshape(-1)
    if m.size != 1 or m[0] <= 0:
        raise ValueError(f"sequence_mask: MaxLenTensor must hold one positive int, got "
                         f"{m.tolist()}")
    return int(m[0])
