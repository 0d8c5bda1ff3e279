"""sequence_softmax and its gradient on CUDA: X holds one value per row and each sequence of
its last LoD level is one softmax. One block per sequence, its threads striding over the rows,
the max and the sums reduced as shared-memory trees in float64 (the CPU kernel sums in double);
an empty sequence's block does nothing.

The LoD exception: the offsets are copied to the device once per batch layout (cached on the
kernel object, _seq.DeviceLoD); nothing else crosses between host and device.
"""
import math

from numba import cuda, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import ROW_THREADS, empty_like, float_input
from headrace.kernels.cuda_rows import block_reduce
from headrace.runtime import Tensor

from ._seq import DeviceLoD, lod_key, offsets

DTYPES = ("float32", "float64")


@cuda.jit
def _softmax(x, off, out):
    s = cuda.blockIdx.x
    t = cuda.threadIdx.x
    a = off[s]
    b = off[s + 1]
    if a == b:      # uniform over the block
        return
    buf = cuda.shared.array(ROW_THREADS, float64)
    m = -math.inf
    for r in range(a + t, b, ROW_THREADS):
        if x[r] > m:
            m = x[r]
    m = block_reduce(buf, m, True)
    total = 0.0
    for r in range(a + t, b, ROW_THREADS):
        total += math.exp(x[r] - m)
    total = block_reduce(buf, total, False)
    inv = 1.0 / total
    for r in range(a + t, b, ROW_THREADS):
        out[r] = math.exp(x[r] - m) * inv


@cuda.jit
def _softmax_grad(y, dy, off, dx):
    s = cuda.blockIdx.x
    t = cuda.threadIdx.x
    a = off[s]
    b = off[s + 1]
    if a == b:
        return
    buf = cuda.shared.array(ROW_THREADS, float64)
    dot = 0.0
    for r in range(a + t, b, ROW_THREADS):
        dot += float64(y[r]) * dy[r]
    dot = block_reduce(buf, dot, False)
    for r in range(a + t, b, ROW_THREADS):
        dx[r] = y[r] * (dy[r] - dot)


class _Seq:
    def __init__(self, attrs, info=None):
        self.lod = DeviceLoD()

    def _offsets(self, lod, rows, op):
        def build():
            off = offsets(lod, rows, op)
            return off, off.size - 1
        return self.lod.get((rows, lod_key(lod[-1:])), build)


def _one_per_row(a, op, what):
    if a.ndim == 0 or a.size != a.shape[0]:
        raise ValueError(f"{op}: {what} must hold one value per row, found shape "
                         f"{list(a.shape)}")


class SequenceSoftmax(_Seq):
    def __call__(self, x):
        name = "sequence_softmax"
        a = float_input(x.data, name, "X")
        if not x.lod:
            raise ValueError(f"{name}: X must be a batch of sequences (a tensor with LoD)")
        _one_per_row(a, name, "X")
        off, S = self._offsets(x.lod, a.shape[0], name)
        out = empty_like(a)
        if a.size and S:
            _softmax[S, ROW_THREADS, current_stream()](a.reshape(-1), off, out.reshape(-1))
        return (Tensor(out, x.lod),)


class SequenceSoftmaxGrad(_Seq):
    """sequence_softmax_grad(X, Out, Out@GRAD) -> (X@GRAD,); X is read for its LoD."""

    def __call__(self, x, out, dout):
        name = "sequence_softmax_grad"
        y = float_input(out.data, name, "Out")
        g = float_input(dout.data, name, "Out@GRAD")
        if x.data.dtype != y.dtype:
            raise TypeError(f"{name}: X has dtype {x.data.dtype}, Out {y.dtype}")
        if g.dtype != y.dtype:
            raise TypeError(f"{name}: Out@GRAD has dtype {g.dtype}, Out {y.dtype}")
        if not x.lod:
            raise ValueError(f"{name}: X must be a batch of sequences (a tensor with LoD)")
        if tuple(g.shape) != tuple(y.shape) or tuple(x.data.shape) != tuple(y.shape) or \
                y.ndim == 0 or y.size != y.shape[0]:
            raise ValueError(f"{name}: X, Out and Out@GRAD must have one shape, one value per "
                             f"row; found {list(x.data.shape)}, {list(y.shape)}, "
                             f"{list(g.shape)}")
        off, S = self._offsets(x.lod, y.shape[0], name)
        dx = empty_like(y)
        if y.size and S:
            _softmax_grad[S, ROW_THREADS, current_stream()](y.reshape(-1), g.reshape(-1), off,
                                                            dx.reshape(-1))
        return (Tensor(dx, x.lod),)


KERNELS = [("sequence_softmax", SequenceSoftmax, DTYPES, "lod"),
           ("sequence_softmax_grad", SequenceSoftmaxGrad, DTYPES, "lod")]
