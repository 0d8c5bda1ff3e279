# cython: language_level=3
"""sequence_expand and its gradient: the row index of every copy is computed from the LoDs,
then one gather (forward) or one scatter-add (np.add.at, gradient)."""
import numpy as np

from headrace.runtime.tensor import Tensor

from ..host.sequence_expand import expansion

DTYPES = ("float32", "float64")


def _same_dtype(data, g, op):
    """The gradient takes X's dtype: a mismatched X is refused, not cast."""
    if data.dtype != g.dtype:
        raise TypeError(f"{op}: X has dtype {data.dtype}, Out@GRAD {g.dtype}")
    return g


cdef class SequenceExpand:
    cdef int ref_level

    def __init__(self, dict attrs, info=None):
        self.ref_level = attrs["ref_level"]

    def __call__(self, x, y):
        index, lod = expansion(x, y, self.ref_level, "sequence_expand")
        return (Tensor(np.asarray(x.data)[index], lod),)


cdef class SequenceExpandGrad:
    cdef int ref_level

    def __init__(self, dict attrs, info=None):
        self.ref_level = attrs["ref_level"]

    def __call__(self, x, y, dout):
        index, _ = expansion(x, y, self.ref_level, "sequence_expand_grad")
        data = np.asarray(x.data)
        g = _same_dtype(data, np.asarray(dout.data), "sequence_expand_grad")
        if g.shape != (len(index),) + data.shape[1:]:
            raise ValueError(f"sequence_expand_grad: Out@GRAD has shape {list(g.shape)}, "
                             f"expected {[len(index)] + list(data.shape[1:])}")
        dx = np.zeros(data.shape, g.dtype)
        np.add.at(dx, index, g)
        return (Tensor(dx, x.lod),)


def _as_rows(x, y, op):
    """sequence_expand_as: X's rows against Y's last LoD level (X's own LoD is not read)."""
    if not y.lod:
        raise ValueError(f"{op}: Y must be a batch of sequences (a tensor with LoD)")
    flat = Tensor(x.data, [])
    index, _ = expansion(flat, y, -1, op)
    return index, [list(y.lod[len(y.lod) - 1])]


cdef class SequenceExpandAs:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, y):
        index, lod = _as_rows(x, y, "sequence_expand_as")
        return (Tensor(np.asarray(x.data)[index], lod),)


cdef class SequenceExpandAsGrad:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, y, dout):
        index, _ = _as_rows(x, y, "sequence_expand_as_grad")
        data = np.asarray(x.data)
        g = _same_dtype(data, np.asarray(dout.data), "sequence_expand_as_grad")
        if g.shape != (len(index),) + data.shape[1:]:
            raise ValueError(f"sequence_expand_as_grad: Out@GRAD has shape {list(g.shape)}, "
                             f"expected {[len(index)] + list(data.shape[1:])}")
        dx = np.zeros(data.shape, g.dtype)
        np.add.at(dx, index, g)
        return (dx,)


KERNELS = [("sequence_expand", SequenceExpand, DTYPES, "lod"),
           ("sequence_expand_grad", SequenceExpandGrad, DTYPES, "lod"),
           ("sequence_expand_as", SequenceExpandAs, DTYPES, "lod"),
           ("sequence_expand_as_grad", SequenceExpandAsGrad, DTYPES, "lod")]
