# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sequence_reshape and its gradient: the data is copied unchanged (any element type); only
the row width changes, and with it each sequence's length in the LoD."""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain, contiguous, dtype_name

import numpy as np

from headrace.runtime.tensor import Tensor

from ..host.sequence_reshape import ReshapedLoD, check_layout

cnp.import_array()

DTYPES = ("int32", "int64", "float32", "float64")


def _checked(object x, str op):
    """X's data after Paddle's checks: 2-D, one LoD level that ends at its rows."""
    cdef object a = contiguous(x.data)
    check_plain(a, op, "X")
    check_layout(a.shape, x.lod, op)
    return a


cdef class SequenceReshape:
    cdef object lod      # new_dim and Out's LoD (kernels/host/sequence_reshape.py)
    cdef Py_ssize_t new_dim

    def __init__(self, dict attrs, info=None):
        self.lod = ReshapedLoD(attrs)
        self.new_dim = self.lod.new_dim

    def __call__(self, x):
        a = _checked(x, "sequence_reshape")
        lod = self.lod(x.lod[0], a.shape[1])
        # A copy: Out is a variable of its own, which later ops may write in place.
        out = np.array(a, copy=True).reshape(a.size // self.new_dim, self.new_dim)
        return (Tensor(out, lod),)


cdef class SequenceReshapeGrad:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, dout):
        op = "sequence_reshape_grad"
        cdef object g
        a = _checked(x, op)
        g = contiguous(getattr(dout, "data", dout))
        if g.dtype != a.dtype:
            raise TypeError(f"{op}: Out@GRAD has dtype {dtype_name(g)}, X {dtype_name(a)}")
        if g.ndim != 2 or g.size != a.size:
            raise ValueError(f"{op}: Out@GRAD has shape {list(g.shape)}; a 2-D tensor of "
                             f"X's {a.size} values was expected")
        return (Tensor(np.array(g, copy=True).reshape(a.shape), x.lod),)


KERNELS = [("sequence_reshape", SequenceReshape, DTYPES, "lod"),
           ("sequence_reshape_grad", SequenceReshapeGrad, DTYPES, "lod")]
