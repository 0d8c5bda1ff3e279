# cython: language_level=3
"""sequence_mask: one broadcast comparison (NumPy's loop), in Cython."""
import numpy as np

from ..host.sequence_mask import MaskAttrs, tensor_width

DTYPES = ("int32", "int64")


cdef class SequenceMask:
    cdef int maxlen
    cdef object dtype

    def __init__(self, dict attrs, info=None):
        a = MaskAttrs(attrs)
        self.maxlen, self.dtype = a.maxlen, a.dtype

    def __call__(self, x, maxlen_tensor=None):
        lengths = np.asarray(x)
        if lengths.dtype.kind not in "iu":
            raise TypeError(f"sequence_mask: X must hold integer lengths, got {lengths.dtype}")
        if (lengths < 0).any():
            raise ValueError(f"sequence_mask: X holds a negative length "
                             f"({int(lengths.min())})")
        width = self.maxlen
        if maxlen_tensor is not None:
            width = tensor_width(np.asarray(maxlen_tensor))
        elif width == -1:
            width = int(lengths.max()) if lengths.size else 0
        return ((np.arange(width) < lengths[..., None]).astype(self.dtype),)


KERNELS = [("sequence_mask", SequenceMask, DTYPES)]
