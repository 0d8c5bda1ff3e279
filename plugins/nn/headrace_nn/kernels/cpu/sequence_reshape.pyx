# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sequence_reshape and its gradient: the data is copied unchanged (any element type); only
the row width changes, and with it each sequence's length in the LoD."""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain, contiguous, dtype_name

import numpy as np

from headrace.runtime.tensor import Tensor

cnp.import_array()

DTYPES = ("int32", "int64", "float32", "float64")


def _checked(object x, str op):
    """X's data after Paddle's checks: 2-D, one LoD level that ends at its rows."""
    cdef object a = contiguous(x.data)
    check_plain(a, op, "X")
    if a.ndim != 2:
        raise ValueError(f"{op}: X must be a 2-D sequence batch [rows, width], found shape "
                         f"{list(a.shape)}")
    if len(x.lod) != 1:
        raise ValueError(f"{op}: X must have one LoD level (Paddle's sequence_reshape takes "
                         f"only one), found {len(x.lod)}")
    off = x.lod[0]
    if len(off) < 1 or off[0] != 0 or off[len(off) - 1] != a.shape[0]:
        raise ValueError(f"{op}: X's LoD {list(off)} does not describe its {a.shape[0]} rows")
    return a


def _new_lod(off, Py_ssize_t width, Py_ssize_t new_dim, str name):
    """Each sequence's length in rows of ``new_dim``; the error names the first sequence
    whose values do not fill whole rows."""
    cdef Py_ssize_t i, n = len(off) - 1, length
    cdef cnp.int64_t[::1] o = np.asarray(off, np.int64)
    out = np.empty(n + 1, np.int64)
    cdef cnp.int64_t[::1] res = out
    res[0] = 0
    for i in range(n):
        length = o[i + 1] - o[i]
        if length < 0:
            raise ValueError(f"sequence_reshape: X's LoD offsets decrease at sequence {i}")
        if (length * width) % new_dim:
            raise ValueError(f"sequence_reshape: sequence {i} of {name} has {length} rows of "
                             f"width {width} = {length * width} values, which do not divide "
                             f"by new_dim {new_dim}")
        res[i + 1] = res[i] + length * width // new_dim
    return out.tolist()


cdef class SequenceReshape:
    cdef Py_ssize_t new_dim

    def __init__(self, dict attrs, info=None):
        self.new_dim = attrs["new_dim"]
        if self.new_dim < 1:
            raise ValueError(f"sequence_reshape: new_dim must be >= 1, got {self.new_dim}")

    def __call__(self, x):
        a = _checked(x, "sequence_reshape")
        width = a.shape[1]
        lod = [list(x.lod[0])] if width == self.new_dim else \
            [_new_lod(x.lod[0], width, self.new_dim, "X")]
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
