# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sequence_conv and its gradient: Paddle's context projection, then one GEMM.

The forward copies each row's window of its sequence into Col [T, contextLength * D] (a
position outside the sequence stays zero, or reads a PaddingData row when paddingTrainable:
up-padding row up + p for a position p < 0, down-padding row up + p - h past a sequence of h
rows) and computes Out = Col @ Filter with one BLAS call for the whole batch.

The gradient computes dCol = Out@GRAD @ Filter^T (one GEMM), adds each block of dCol back to
the X row (or PaddingData row) it was copied from, and Filter@GRAD = Col^T @ Out@GRAD (one
GEMM over the rebuilt Col). Paddle reuses dCol's buffer to rebuild Col and leaves stale values
in it for a sequence no longer than contextStart (without paddingTrainable); the gradient here
is the forward's derivative throughout.

Both are LoD kernels: X comes with its LoD, which must be one level of offsets that start at
0, never decrease and end at X's rows; Out and X@GRAD keep it.
"""
cimport numpy as cnp
from libc.string cimport memcpy
from headrace.kernels.common cimport real, shape_of
from ._common cimport expect_shape, float_array, mm, same_float

import numpy as np

from headrace.runtime.tensor import Tensor

from ..host._common import wanted
from ..host.sequence_conv import GRADS, ContextWindow, one_level, x_offsets

cnp.import_array()

DTYPES = ("float32", "float64")


cdef void _project(const real* x, const real* pad, const long long* off, Py_ssize_t S,
                   Py_ssize_t D, int start, int length, int up, real* col) noexcept nogil:
    """Col's rows from X's (Col zeroed by the caller); ``pad`` NULL leaves zeros outside."""
    cdef Py_ssize_t s, r, j, p, b, h, width = length * D
    cdef const real* src
    for s in range(S):
        b = off[s]
        h = off[s + 1] - b
        for r in range(h):
            for j in range(length):
                p = r + start + j
                if 0 <= p < h:
                    src = x + (b + p) * D
                elif pad == NULL:
                    continue
                elif p < 0:
                    src = pad + (up + p) * D
                else:
                    src = pad + (up + p - h) * D
                memcpy(col + (b + r) * width + j * D, src, D * sizeof(real))


cdef void _scatter(const real* dcol, const long long* off, Py_ssize_t S, Py_ssize_t D,
                   int start, int length, int up, real* dx, real* dpad) noexcept nogil:
    """The inverse of _project: each block of dCol added to the row it was read from (X's into
    ``dx`` when not NULL, PaddingData's into ``dpad`` when not NULL)."""
    cdef Py_ssize_t s, r, j, p, b, h, k, width = length * D
    cdef const real* src
    cdef real* dst
    for s in range(S):
        b = off[s]
        h = off[s + 1] - b
        for r in range(h):
            for j in range(length):
                p = r + start + j
                if 0 <= p < h:
                    if dx == NULL:
                        continue
                    dst = dx + (b + p) * D
                elif dpad == NULL:
                    continue
                elif p < 0:
                    dst = dpad + (up + p) * D
                else:
                    dst = dpad + (up + p - h) * D
                src = dcol + (b + r) * width + j * D
                for k in range(D):
                    dst[k] += src[k]


cdef class _Setting:
    """The attributes (the host's ContextWindow) as C ints for the loops, and the inputs'
    checks."""
    cdef int start, length, up, down
    cdef bint trainable
    cdef str op

    def __init__(self, dict attrs, str op):
        win = ContextWindow(attrs, op)
        self.op = op
        self.start, self.length, self.trainable = win.start, win.length, win.trainable
        self.up, self.down = win.up, win.down

    cdef tuple inputs(self, x, padding, filt):
        """(X data, offsets, PaddingData or None, Filter), checked."""
        lod = getattr(x, "lod", None)
        one_level(lod, self.op)
        cdef cnp.ndarray a = float_array(x.data, self.op, "X")
        cdef tuple xs = shape_of(a)
        if len(xs) != 2:
            raise ValueError(f"{self.op}: X must be 2-D [T, D], found {list(xs)}")
        cdef cnp.ndarray off = x_offsets(lod, xs[0], self.op)
        cdef cnp.ndarray w = float_array(getattr(filt, "data", filt), self.op, "Filter")
        same_float(a, w, self.op, "X", "Filter")
        ws = shape_of(w)
        if len(ws) != 2:
            raise ValueError(f"{self.op}: Filter must be 2-D, found {list(ws)}")
        expect_shape(w, (self.length * xs[1], ws[1]), self.op, "Filter",
                     "contextLength * D rows: shape")
        cdef cnp.ndarray p = None
        if self.trainable:
            if padding is None:
                raise ValueError(f"{self.op}: paddingTrainable needs the PaddingData input")
            p = float_array(getattr(padding, "data", padding), self.op, "PaddingData")
            same_float(a, p, self.op, "X", "PaddingData")
            expect_shape(p, (self.up + self.down, xs[1]), self.op, "PaddingData",
                         "[up + down, D] rows: shape")
        return a, off, p, w

    cdef cnp.ndarray col(self, cnp.ndarray a, cnp.ndarray off, cnp.ndarray p):
        cdef Py_ssize_t T = a.shape[0], D = a.shape[1]
        cdef cnp.ndarray col = np.zeros((T, self.length * D), a.dtype)
        cdef const long long* op = <const long long*>cnp.PyArray_DATA(off)
        cdef Py_ssize_t S = off.size - 1
        cdef void* pp = cnp.PyArray_DATA(p) if p is not None else NULL
        if a.dtype.num == cnp.NPY_FLOAT32:
            with nogil:
                _project(<const float*>cnp.PyArray_DATA(a), <const float*>pp, op, S, D,
                         self.start, self.length, self.up, <float*>cnp.PyArray_DATA(col))
        else:
            with nogil:
                _project(<const double*>cnp.PyArray_DATA(a), <const double*>pp, op, S, D,
                         self.start, self.length, self.up, <double*>cnp.PyArray_DATA(col))
        return col


cdef class SequenceConv:
    cdef _Setting setting

    def __init__(self, dict attrs, info=None):
        self.setting = _Setting(attrs, "sequence_conv")

    def __call__(self, x, padding, filt):
        a, off, p, w = self.setting.inputs(x, padding, filt)
        col = self.setting.col(a, off, p)
        out = np.empty((a.shape[0], w.shape[1]), a.dtype)
        mm(col, w, out, False, False, 0.0)
        return (Tensor(out, [list(x.lod[0])]),)


cdef class SequenceConvGrad:
    cdef _Setting setting
    cdef bint want_x, want_pad, want_w

    def __init__(self, dict attrs, info=None):
        self.setting = _Setting(attrs, "sequence_conv_grad")
        self.want_x, self.want_pad, self.want_w = wanted(info, GRADS)

    def __call__(self, x, padding, filt, dout):
        cdef _Setting st = self.setting
        a, off, p, w = st.inputs(x, padding, filt)
        cdef cnp.ndarray g = float_array(getattr(dout, "data", dout), st.op, "Out@GRAD")
        same_float(a, g, st.op, "X", "Out@GRAD")
        expect_shape(g, (a.shape[0], w.shape[1]), st.op, "Out@GRAD", "Out's shape")
        cdef Py_ssize_t T = a.shape[0], D = a.shape[1]
        cdef bint want_pad = self.want_pad and p is not None
        dx = dpad = dw = None
        cdef cnp.ndarray dcol
        cdef void* pdx
        cdef void* pdp
        cdef void* pdc
        cdef const long long* op = <const long long*>cnp.PyArray_DATA(off)
        cdef Py_ssize_t S = off.size - 1
        if self.want_x or want_pad:
            dcol = np.empty((T, st.length * D), a.dtype)
            mm(g, w, dcol, False, True, 0.0)
            dx = np.zeros((T, D), a.dtype) if self.want_x else None
            dpad = np.zeros((st.up + st.down, D), a.dtype) if want_pad else None
            pdx = cnp.PyArray_DATA(dx) if dx is not None else NULL
            pdp = cnp.PyArray_DATA(dpad) if dpad is not None else NULL
            pdc = cnp.PyArray_DATA(dcol)
            if a.dtype.num == cnp.NPY_FLOAT32:
                with nogil:
                    _scatter(<const float*>pdc, op, S, D, st.start, st.length, st.up,
                             <float*>pdx, <float*>pdp)
            else:
                with nogil:
                    _scatter(<const double*>pdc, op, S, D, st.start, st.length, st.up,
                             <double*>pdx, <double*>pdp)
        if self.want_w:
            dw = np.empty((w.shape[0], w.shape[1]), a.dtype)
            mm(st.col(a, off, p), g, dw, True, False, 0.0)
        return (Tensor(dx, [list(x.lod[0])]) if dx is not None else None, dpad, dw)


KERNELS = [("sequence_conv", SequenceConv, DTYPES, "lod"),
           ("sequence_conv_grad", SequenceConvGrad, DTYPES, "lod")]
