# cython: language_level=3
"""sequence_pad / sequence_unpad and their gradients: the positions of the sequences' rows in
the padded tensor are computed once from the LoD (or the lengths), then one gather or one
scatter moves the rows."""
import numpy as np

from headrace.runtime.tensor import Tensor, lengths_to_offsets

from ..host.sequence_pad import integer_lengths, last_offsets, padded_width, unpad_lengths

DTYPES = ("float32", "float64")


def _positions(lengths, width):
    """Flat positions (sequence * width + step) of every row, in row order."""
    seq = np.repeat(np.arange(len(lengths)), lengths)
    first = np.concatenate([[0], np.cumsum(lengths)])[:-1]
    return seq * width + np.arange(int(np.sum(lengths))) - np.repeat(first, lengths)


cdef class SequencePad:
    cdef int padded

    def __init__(self, dict attrs, info=None):
        self.padded = attrs["padded_length"]

    def __call__(self, x, pad):
        data = np.asarray(x.data)
        lengths = np.diff(last_offsets(x.lod, data.shape[0], "sequence_pad"))
        width = padded_width(lengths, self.padded, "sequence_pad")
        row = data.shape[1:]
        p = np.asarray(pad.data, data.dtype)
        if p.size != 1 and p.shape != row:
            raise ValueError(f"sequence_pad: PadValue must be one value or one row "
                             f"{list(row)}, found {list(p.shape)}")
        out = np.empty((len(lengths) * width,) + row, data.dtype)
        out[...] = p.reshape(()) if p.size == 1 and p.shape != row else p
        out[_positions(lengths, width)] = data
        return (out.reshape((len(lengths), width) + row), lengths.astype(np.int64))


cdef class SequencePadGrad:
    cdef int padded

    def __init__(self, dict attrs, info=None):
        self.padded = attrs["padded_length"]

    def __call__(self, x, dout):
        data = np.asarray(x.data)
        lengths = np.diff(last_offsets(x.lod, data.shape[0], "sequence_pad_grad"))
        g = np.asarray(dout.data)
        if g.dtype != data.dtype:
            raise TypeError(f"sequence_pad_grad: X has dtype {data.dtype}, Out@GRAD {g.dtype}")
        width = g.shape[1] if g.ndim > 1 else 0
        if g.shape[:1] != (len(lengths),) or g.shape[2:] != data.shape[1:] or \
                (len(lengths) and width < lengths.max()):
            raise ValueError(f"sequence_pad_grad: Out@GRAD has shape {list(g.shape)}, not "
                             f"[{len(lengths)}, >= longest, {list(data.shape[1:])}]")
        flat = g.reshape((-1,) + data.shape[1:])
        return (Tensor(np.ascontiguousarray(flat[_positions(lengths, width)]), x.lod),)


def _lengths(length, n, width, op):
    raw = np.asarray(length)
    integer_lengths(raw.dtype, op)
    return unpad_lengths(raw, n, width, op)


cdef class SequenceUnpad:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, length):
        data = np.asarray(x.data)
        if data.ndim < 2:
            raise ValueError(f"sequence_unpad: X must be [sequences, length, ...], found "
                             f"{list(data.shape)}")
        lengths = _lengths(length.data, data.shape[0], data.shape[1], "sequence_unpad")
        flat = data.reshape((-1,) + data.shape[2:])
        rows = np.ascontiguousarray(flat[_positions(lengths, data.shape[1])])
        return (Tensor(rows, [lengths_to_offsets(lengths.tolist())]),)


cdef class SequenceUnpadGrad:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, length, dout):
        data = np.asarray(x.data)
        lengths = _lengths(length.data, data.shape[0], data.shape[1], "sequence_unpad_grad")
        g = np.asarray(dout.data)
        if g.dtype != data.dtype:
            raise TypeError(f"sequence_unpad_grad: X has dtype {data.dtype}, Out@GRAD "
                            f"{g.dtype}")
        if g.shape != (int(lengths.sum()),) + data.shape[2:]:
            raise ValueError(f"sequence_unpad_grad: Out@GRAD has shape {list(g.shape)}, "
                             f"expected {[int(lengths.sum())] + list(data.shape[2:])}")
        dx = np.zeros((data.shape[0] * data.shape[1],) + data.shape[2:], g.dtype)
        dx[_positions(lengths, data.shape[1])] = g
        return (dx.reshape(data.shape),)


KERNELS = [("sequence_pad", SequencePad, DTYPES, "lod"),
           ("sequence_pad_grad", SequencePadGrad, DTYPES, "lod"),
           ("sequence_unpad", SequenceUnpad, DTYPES, "lod"),
           ("sequence_unpad_grad", SequenceUnpadGrad, DTYPES, "lod")]
