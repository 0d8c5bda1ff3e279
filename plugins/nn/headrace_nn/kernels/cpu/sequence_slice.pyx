# cython: language_level=3
"""sequence_slice and its gradient: the sliced rows' indices from the LoD and the offsets, then
one gather (or scatter)."""
import numpy as np

from headrace.runtime.tensor import Tensor

from ..host.sequence_slice import slice_layout

DTYPES = ("float32", "float64")


def _rows(x, offset, length, op):
    data = np.asarray(x.data)
    start = np.asarray(offset.data if hasattr(offset, "data") else offset).reshape(-1)
    size = np.asarray(length.data if hasattr(length, "data") else length).reshape(-1)
    off, start, size, _, lod = slice_layout(x.lod, start, size, op)
    first = np.concatenate([[0], np.cumsum(size)])[:-1]
    index = np.repeat(off[:-1] + start, size) + np.arange(int(size.sum())) - \
        np.repeat(first, size)
    return data, index, lod


cdef class SequenceSlice:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, offset, length):
        data, index, lod = _rows(x, offset, length, "sequence_slice")
        return (Tensor(data[index], lod),)


cdef class SequenceSliceGrad:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, offset, length, dout):
        data, index, _ = _rows(x, offset, length, "sequence_slice_grad")
        g = np.asarray(dout.data)
        if g.dtype != data.dtype:
            raise TypeError(f"sequence_slice_grad: X has dtype {data.dtype}, Out@GRAD "
                            f"{g.dtype}")
        if g.shape != (len(index),) + data.shape[1:]:
            raise ValueError(f"sequence_slice_grad: Out@GRAD has shape {list(g.shape)}, "
                             f"expected {[len(index)] + list(data.shape[1:])}")
        dx = np.zeros(data.shape, g.dtype)
        dx[index] = g
        return (Tensor(dx, x.lod),)


KERNELS = [("sequence_slice", SequenceSlice, DTYPES, "lod"),
           ("sequence_slice_grad", SequenceSliceGrad, DTYPES, "lod")]
