"""sequence_conv and its gradient on CUDA: Paddle's context projection, then the shared tiled
GEMM (headrace.kernels.cuda_gemm), as the CPU kernel (kernels/cpu/sequence_conv.pyx).

Col [T, contextLength * D] is built by one thread per element: its row finds its sequence by a
binary search of the offsets and reads X's row of the window, or (paddingTrainable) a
PaddingData row outside the sequence, else 0; Out = Col @ Filter. The gradient computes
dCol = Out@GRAD @ Filter^T; X@GRAD is a gather, one thread per element summing the (at most
contextLength) dCol blocks read from it, with no atomics; PaddingData@GRAD, a few rows every
sequence reads, is an atomic scatter-add of the dCol blocks read from padding; Filter@GRAD =
Col^T @ Out@GRAD over the rebuilt Col.

The LoD exception: the offsets are copied to the device once per batch layout (cached on the
kernel object, _seq.DeviceLoD); nothing else crosses between host and device.
"""
from numba import cuda

from headrace.kernels.cuda_gemm import gemm
from headrace.kernels.cuda_launch import device_empty, device_fill, float_input, launch
from headrace.runtime import Tensor

from ..host._common import wanted
from ..host.sequence_conv import GRADS, ContextWindow, one_level, x_offsets
from ._seq import DeviceLoD, lod_key, seq_of

DTYPES = ("float32", "float64")


@cuda.jit(device=True)
def _tap(off, S, D, start, L, k):
    """Col element k's (column e, first row b and rows h of its sequence, position p of the
    window's row: X's row b + p when 0 <= p < h, else a padding position)."""
    e = k % D
    j = (k // D) % L
    t = k // (D * L)
    s = seq_of(off, S, t)
    b = off[s]
    h = off[s + 1] - b
    return e, b, h, t - b + start + j


@cuda.jit
def _project(x, pad, off, col, S, D, start, L, up, total, has_pad):
    k = cuda.grid(1)
    if k < total:
        e, b, h, p = _tap(off, S, D, start, L, k)
        if p >= 0 and p < h:
            col[k] = x[(b + p) * D + e]
        elif not has_pad:
            col[k] = 0
        elif p < 0:
            col[k] = pad[(up + p) * D + e]
        else:
            col[k] = pad[(up + p - h) * D + e]


@cuda.jit
def _dx(dcol, off, dx, S, D, start, L, total):
    """dx[q, e] = the sum of the dCol blocks read from X's row q."""
    k = cuda.grid(1)
    if k < total:
        e = k % D
        q = k // D
        s = seq_of(off, S, q)
        b = off[s]
        h = off[s + 1] - b
        acc = 0.0
        for j in range(L):
            r = q - b - start - j          # the row whose window position j read row q
            if r >= 0 and r < h:
                acc += dcol[((b + r) * L + j) * D + e]
        dx[k] = acc


@cuda.jit
def _dpad(dcol, off, dpad, S, D, start, L, up, total):
    """Each dCol element read from PaddingData, atomically added to its row."""
    k = cuda.grid(1)
    if k < total:
        e, _, h, p = _tap(off, S, D, start, L, k)
        if p < 0:
            cuda.atomic.add(dpad, (up + p) * D + e, dcol[k])
        elif p >= h:
            cuda.atomic.add(dpad, (up + p - h) * D + e, dcol[k])


class _Setting(ContextWindow):
    """The attributes (the host's ContextWindow), the inputs' checks and the device offsets."""

    def __init__(self, attrs, op):
        super().__init__(attrs, op)
        self.lod = DeviceLoD()

    def inputs(self, x, padding, filt):
        """(X data, device offsets, S, PaddingData or None, Filter), checked."""
        op = self.op
        lod = getattr(x, "lod", None)
        one_level(lod, op)
        a = float_input(x.data, op, "X")
        if a.ndim != 2:
            raise ValueError(f"{op}: X must be 2-D [T, D], found {list(a.shape)}")
        T, D = a.shape

        def build():
            off = x_offsets(lod, T, op)
            return off, off.size - 1
        off, S = self.lod.get((T, lod_key(lod)), build)
        w = float_input(getattr(filt, "data", filt), op, "Filter")
        _same(a, w, op, "Filter")
        if w.ndim != 2:
            raise ValueError(f"{op}: Filter must be 2-D, found {list(w.shape)}")
        _expect(w, (self.length * D, w.shape[1]), op, "Filter", "contextLength * D rows: shape")
        p = None
        if self.trainable:
            if padding is None:
                raise ValueError(f"{op}: paddingTrainable needs the PaddingData input")
            p = float_input(getattr(padding, "data", padding), op, "PaddingData")
            _same(a, p, op, "PaddingData")
            _expect(p, (self.up + self.down, D), op, "PaddingData",
                    "[up + down, D] rows: shape")
        return a, off, S, p, w

    def col(self, a, off, S, p):
        T, D = a.shape
        col = device_empty((T, self.length * D), a.dtype)
        n = col.size
        xf = a.reshape(-1)
        launch(_project, n, xf, xf if p is None else p.reshape(-1), off, col.reshape(-1), S,
                D, self.start, self.length, self.up, n, p is not None)
        return col


def _same(a, b, op, slot):
    if b.dtype != a.dtype:
        raise TypeError(f"{op}: {slot} has dtype {b.dtype}, X {a.dtype}")


def _expect(a, shape, op, slot, what):
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{op}: {slot} has shape {list(a.shape)}, expected {list(shape)} "
                         f"({what})")


class SequenceConv:
    def __init__(self, attrs, info=None):
        self.setting = _Setting(attrs, "sequence_conv")

    def __call__(self, x, padding, filt):
        st = self.setting
        a, off, S, p, w = st.inputs(x, padding, filt)
        col = st.col(a, off, S, p)
        T, M = a.shape[0], w.shape[1]
        out = device_empty((T, M), a.dtype)
        gemm(col.reshape(-1), w.reshape(-1), out.reshape(-1), T, M, col.shape[1])
        return (Tensor(out, [list(x.lod[0])]),)


class SequenceConvGrad:
    """(X, PaddingData, Filter, Out@GRAD) -> (X@GRAD, PaddingData@GRAD, Filter@GRAD)."""

    def __init__(self, attrs, info=None):
        self.setting = _Setting(attrs, "sequence_conv_grad")
        self.want_x, self.want_pad, self.want_w = wanted(info, GRADS)

    def __call__(self, x, padding, filt, dout):
        st = self.setting
        a, off, S, p, w = st.inputs(x, padding, filt)
        g = float_input(getattr(dout, "data", dout), st.op, "Out@GRAD")
        _same(a, g, st.op, "Out@GRAD")
        _expect(g, (a.shape[0], w.shape[1]), st.op, "Out@GRAD", "Out's shape")
        T, D = a.shape
        M, LD = w.shape[1], st.length * D
        want_pad = self.want_pad and p is not None
        dx = dpad = dw = None
        if self.want_x or want_pad:
            dcol = device_empty((T, LD), a.dtype)
            dcf = dcol.reshape(-1)
            gemm(g.reshape(-1), w.reshape(-1), dcf, T, LD, M, trans_b=True)
            if self.want_x:
                dx = device_empty((T, D), a.dtype)
                launch(_dx, T * D, dcf, off, dx.reshape(-1), S, D, st.start, st.length,
                        T * D)
                dx = Tensor(dx, [list(x.lod[0])])
            if want_pad:
                dpad = device_empty((st.up + st.down, D), a.dtype)
                device_fill(dpad, dpad.dtype.type(0))
                launch(_dpad, T * LD, dcf, off, dpad.reshape(-1), S, D, st.start, st.length,
                        st.up, T * LD)
        if self.want_w:
            dw = device_empty(w.shape, a.dtype)
            col = st.col(a, off, S, p)
            gemm(col.reshape(-1), g.reshape(-1), dw.reshape(-1), LD, M, T, trans_a=True)
        return (dx, dpad, dw)


KERNELS = [("sequence_conv", SequenceConv, DTYPES, "lod"),
           ("sequence_conv_grad", SequenceConvGrad, DTYPES, "lod")]
