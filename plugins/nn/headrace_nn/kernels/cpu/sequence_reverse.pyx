# cython: language_level=3
"""sequence_reverse: one gather of X's rows by a permutation computed from the LoD (any
element type)."""
import numpy as np

from headrace.runtime.tensor import Tensor

# Any element type: the rows are moved, not computed.
DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


def reversed_rows(lod, rows):
    """The row permutation that reverses each sequence of the last LoD level."""
    if not lod:
        raise ValueError("sequence_reverse: X must be a batch of sequences (a tensor with LoD)")
    offsets = np.asarray(lod[len(lod) - 1], np.int64)
    if offsets[len(offsets) - 1] != rows:
        raise ValueError(f"sequence_reverse: X's LoD ends at {offsets[len(offsets) - 1]}, X "
                         f"has {rows} rows")
    lengths = np.diff(offsets)
    seq = np.repeat(np.arange(len(lengths)), lengths)
    # Row r of sequence s (rows a to b - 1) takes row a + b - 1 - r.
    return offsets[seq] + offsets[seq + 1] - 1 - np.arange(rows)


cdef class SequenceReverse:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x):
        data = np.asarray(x.data)
        if data.ndim == 0:
            raise ValueError("sequence_reverse: X must have a row dim")
        return (Tensor(data[reversed_rows(x.lod, data.shape[0])], x.lod),)


KERNELS = [("sequence_reverse", SequenceReverse, DTYPES, "lod")]
