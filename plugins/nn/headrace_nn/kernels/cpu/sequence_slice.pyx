# cython: language_level=3
"""sequence_slice and its gradient: the sliced rows' indices from the LoD and the offsets, then
one gather (or scatter)."""
import numpy as np

from headrace.runtime.tensor import Tensor, lengths_to_offsets

DTYPES = ("float32", "float64")


def _rows(x, offset, length, op):
    data = np.asarray(x.data)
    if not x.lod:
        raise ValueError(f"{op}: X must be a batch of sequences (a tensor with LoD)")
    off = np.asarray(x.lod[len(x.lod) - 1], np.int64)
    n = len(off) - 1
    start = np.asarray(offset.data if hasattr(offset, "data") else offset).reshape(-1)
    size = np.asarray(length.data if hasattr(length, "data") else length).reshape(-1)
    if start.size != n or size.size != n:
        raise ValueError(f"{op}: Offset and Length must hold one value per sequence ({n}); "
                         f"found {start.size} and {size.size}")
    start, size = start.astype(np.int64), size.astype(np.int64)
    lengths = np.diff(off)
    bad = np.nonzero((start < 0) | (size < 0) | (start + size > lengths))[0]
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{op}: sequence {i} has {int(lengths[i])} rows; Offset "
                         f"{int(start[i])} and Length {int(size[i])} do not fit")
    first = np.concatenate([[0], np.cumsum(size)])[:-1]
    index = np.repeat(off[:-1] + start, size) + np.arange(int(size.sum())) - \
        np.repeat(first, size)
    lod = [list(level) for level in x.lod[:-1]] + [lengths_to_offsets(size.tolist())]
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
