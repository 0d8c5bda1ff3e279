# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sequence_softmax and its gradient: one pass of C per sequence, sums in double."""
cimport numpy as cnp
from libc.math cimport exp
from headrace.kernels.common cimport real

import numpy as np

from headrace.runtime.tensor import Tensor

cnp.import_array()

DTYPES = ("float32", "float64")


def _offsets(lod, rows, op):
    if not lod:
        raise ValueError(f"{op}: X must be a batch of sequences (a tensor with LoD)")
    off = np.asarray(lod[len(lod) - 1], np.int64)
    if off[0] != 0 or off[len(off) - 1] != rows or (np.diff(off) < 0).any():
        raise ValueError(f"{op}: X's LoD {list(off)} does not describe its {rows} rows")
    return off


cdef void _softmax(const real* x, real* out, const cnp.int64_t* off, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t s, r
    cdef double m, total
    for s in range(n):
        if off[s] == off[s + 1]:
            continue
        m = x[off[s]]
        for r in range(off[s], off[s + 1]):
            if x[r] > m:
                m = x[r]
        total = 0
        for r in range(off[s], off[s + 1]):
            out[r] = <real>exp(x[r] - m)
            total += out[r]
        for r in range(off[s], off[s + 1]):
            out[r] = <real>(out[r] / total)


cdef void _grad(const real* y, const real* dy, real* dx, const cnp.int64_t* off,
                Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t s, r
    cdef double dot
    for s in range(n):
        dot = 0
        for r in range(off[s], off[s + 1]):
            dot += y[r] * dy[r]
        for r in range(off[s], off[s + 1]):
            dx[r] = <real>(y[r] * (dy[r] - dot))


cdef class SequenceSoftmax:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x):
        data = np.ascontiguousarray(x.data)
        off = _offsets(x.lod, data.shape[0] if data.ndim else 0, "sequence_softmax")
        if data.size != data.shape[0]:
            raise ValueError(f"sequence_softmax: X must hold one value per row, found shape "
                             f"{list(data.shape)}")
        out = np.empty_like(data)
        if data.dtype == np.float32:
            _run[float](data.reshape(-1), out.reshape(-1), off)
        else:
            _run[double](data.reshape(-1), out.reshape(-1), off)
        return (Tensor(out, x.lod),)


cdef _run(real[::1] x, real[::1] out, cnp.int64_t[::1] off):
    if x.shape[0] == 0:
        return
    with nogil:
        _softmax(&x[0], &out[0], &off[0], off.shape[0] - 1)


cdef class SequenceSoftmaxGrad:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, out, dout):
        y = np.ascontiguousarray(out.data)
        if np.asarray(x.data).dtype != y.dtype:
            raise TypeError(f"sequence_softmax_grad: X has dtype {np.asarray(x.data).dtype}, "
                            f"Out {y.dtype}")
        g = np.ascontiguousarray(dout.data, y.dtype)
        off = _offsets(x.lod, y.shape[0] if y.ndim else 0, "sequence_softmax_grad")
        if g.shape != y.shape or np.shape(x.data) != y.shape or y.size != y.shape[0]:
            raise ValueError(f"sequence_softmax_grad: X, Out and Out@GRAD must have one "
                             f"shape, one value per row; found {list(np.shape(x.data))}, "
                             f"{list(y.shape)}, {list(g.shape)}")
        dx = np.empty_like(y)
        if y.dtype == np.float32:
            _run_grad[float](y.reshape(-1), g.reshape(-1), dx.reshape(-1), off)
        else:
            _run_grad[double](y.reshape(-1), g.reshape(-1), dx.reshape(-1), off)
        return (Tensor(dx, x.lod),)


cdef _run_grad(real[::1] y, real[::1] g, real[::1] dx, cnp.int64_t[::1] off):
    if y.shape[0] == 0:
        return
    with nogil:
        _grad(&y[0], &g[0], &dx[0], &off[0], off.shape[0] - 1)


KERNELS = [("sequence_softmax", SequenceSoftmax, DTYPES, "lod"),
           ("sequence_softmax_grad", SequenceSoftmaxGrad, DTYPES, "lod")]
