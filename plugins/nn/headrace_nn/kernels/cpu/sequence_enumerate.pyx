# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sequence_enumerate: one pass over each sequence's ids writing its windows, in C for int32
and int64 ids."""
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t
from headrace.kernels.common cimport contiguous

import numpy as np

from headrace.runtime.tensor import Tensor

cnp.import_array()

DTYPES = ("int32", "int64")

ctypedef fused ident:
    int32_t
    int64_t


cdef void _windows(const ident* x, ident* out, const int64_t* off, Py_ssize_t n,
                   Py_ssize_t win, ident pad) noexcept nogil:
    cdef Py_ssize_t s, r, k
    for s in range(n):
        for r in range(off[s], off[s + 1]):
            for k in range(win):
                out[r * win + k] = x[r + k] if r + k < off[s + 1] else pad


cdef _run(const ident[::1] x, ident[::1] out, const int64_t[::1] off, Py_ssize_t win,
          ident pad):
    if x.shape[0] == 0:
        return
    with nogil:
        _windows(&x[0], &out[0], &off[0], off.shape[0] - 1, win, pad)


cdef class SequenceEnumerate:
    cdef Py_ssize_t win
    cdef long long pad

    def __init__(self, dict attrs, info=None):
        self.win = attrs["win_size"]
        self.pad = attrs["pad_value"]
        if self.win < 2:
            raise ValueError(f"sequence_enumerate: win_size must be >= 2, got {self.win}")

    def __call__(self, x):
        op = "sequence_enumerate"
        cdef object data = contiguous(x.data)
        if data.dtype != np.int32 and data.dtype != np.int64:
            raise TypeError(f"{op}: X has dtype {data.dtype.name}, expected int32 or int64 ids")
        if data.ndim != 2 or data.shape[1] != 1:
            raise ValueError(f"{op}: X must be ids of shape [rows, 1], found "
                             f"{list(data.shape)}")
        if not x.lod:
            raise ValueError(f"{op}: X must be a batch of sequences (a tensor with LoD)")
        # Paddle reads the first LoD level, which must then count rows.
        off = np.asarray(x.lod[0], np.int64)
        rows = data.shape[0]
        if len(off) < 1 or off[0] != 0 or off[len(off) - 1] != rows or \
                (np.diff(off) < 0).any():
            raise ValueError(f"{op}: X's first LoD level {off.tolist()} does not describe its "
                             f"{rows} rows")
        out = np.empty((rows, self.win), data.dtype)
        if data.dtype == np.int32:
            _run[int32_t](data.reshape(-1), out.reshape(-1), off, self.win, <int32_t>self.pad)
        else:
            _run[int64_t](data.reshape(-1), out.reshape(-1), off, self.win, <int64_t>self.pad)
        return (Tensor(out, x.lod),)


KERNELS = [("sequence_enumerate", SequenceEnumerate, DTYPES, "lod")]
