"""What the recurrent CUDA kernels (lstm, gru, lstmp) share: the step-major layout of a batch
of sequences on the device, and the row gathers and scatters around it. A private module:
kernel registration skips it.

The layout is the CPU kernels' (kernels/cpu/_rnn.layout, imported, not copied): sequences
ranked by length, longest first, step t holding one row per sequence longer than t, so a step
is a prefix of the one before and its recurrent product is one GEMM over a contiguous block of
rows. Its index arrays are host metadata derived from the LoD; they cross to the device once
per batch layout (cached on the kernel object, _seq.DeviceLoD), the one copy these kernels
make. The step counts stay on the host: they size each step's launches.
"""
import numpy as np
from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import THREADS, device_empty, device_fill, float_input, grid
from headrace.runtime import Tensor

from ..cpu._rnn import ACTIVATIONS, layout
from ._seq import DeviceLoD, lod_key

__all__ = ["ACTIVATIONS", "Steps", "launch", "value", "operand", "gather_rows", "scatter_rows",
           "unrank", "prev_rows", "zeros"]


def launch(kernel, n, *args):
    """``kernel`` over ``n`` elements, a thread each, on the executor's stream: blocks of
    THREADS, or one block of ``n`` rounded up to a warp when fewer (a step's kernels cover
    that step's rows, often fewer than a block: no idle warps, and the simulator, which runs
    every thread of a block as a Python thread, spends nothing on them)."""
    if n > 0:
        blocks, threads = grid(n, min(THREADS, 32 * ((n + 31) // 32)))
        kernel[blocks, threads, current_stream()](*args)


class Steps:
    """A batch's step-major layout: ``alive``/``first`` (host ints per step), ``total`` rows,
    ``n_seq`` sequences, and on the device ``idx`` (Input's row of each step-major row),
    ``order`` (the sequences by rank) and ``prev`` (per step-major row, the step-major row of
    the step before, or -1 - rank at a sequence's first step)."""

    def __init__(self, dev, meta):
        self.alive, self.first, self.total, self.n_seq = meta
        # each block at least one entry (a padding zero when empty: a kernel argument)
        t, s = max(self.total, 1), max(self.n_seq, 1)
        self.idx = dev[:t]
        self.order = dev[t:t + s]
        self.prev = dev[t + s:t + s + t]
        self.steps = len(self.alive)


class Layouts:
    """The device layouts a kernel has met, by (rows, LoD, direction)."""

    def __init__(self):
        self.cache = DeviceLoD()

    def get(self, lod, rows, reverse, op):
        def build():
            order, alive, first, idx = layout(lod, rows, reverse, op)
            total = int(alive.sum())
            rank = np.arange(total) - np.repeat(first, alive)
            step = np.repeat(np.arange(len(alive)), alive)
            before = np.concatenate([[0], first])[step]   # first row of the step before
            prev = np.where(step > 0, before + rank, -1 - rank)
            host = np.concatenate([idx, [0] * (total == 0), order, [0] * (len(order) == 0),
                                   prev, [0] * (total == 0)]).astype(np.int64)
            meta = ([int(v) for v in alive], [int(v) for v in first], total, len(order))
            return host, meta
        dev, meta = self.cache.get((rows, bool(reverse), lod_key(lod)), build)
        return Steps(dev, meta)

    def sequences(self, op, x, reverse, gates=None, slot="Input", nonempty=False):
        """(data, rows, hidden, Steps) of ``x``, the Tensor that carries the sequences: float,
        2-D and, with ``gates``, [rows, gates * hidden] (hidden > 0 with ``nonempty``)."""
        data = float_input(x.data, op, slot)
        cols = data.shape[1] if data.ndim == 2 else 0
        if data.ndim != 2 or (gates and (cols % gates or (nonempty and cols == 0))):
            what = f"[rows, {gates} * hidden]" if gates else "2-D"
            raise ValueError(f"{op}: {slot} must be {what}, found {list(data.shape)}")
        rows = data.shape[0]
        return data, rows, cols // gates if gates else cols, self.get(x.lod, rows, reverse, op)


def value(v):
    """The device array of input ``v``: a Tensor's data, or ``v`` itself (not getattr(v,
    "data"): the simulator's arrays answer .data with their host buffer)."""
    return v.data if isinstance(v, Tensor) else v


def operand(v, dtype, shape, op, slot):
    """The device array of input ``v`` (a Tensor or an array), checked as the CPU kernels'
    ``checked``: ``dtype`` and ``shape`` or a clear error; flattened."""
    a = value(v)
    if a is None:
        raise ValueError(f"{op}: {slot} has no value")
    float_input(a, op, slot)
    if a.dtype != dtype:
        raise TypeError(f"{op}: {slot} has dtype {a.dtype}, Input is {dtype}")
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{op}: {slot} has shape {list(a.shape)}, expected {list(shape)}")
    return a.reshape(-1)


def zeros(shape, dtype):
    return device_fill(device_empty(shape, dtype), np.dtype(dtype).type(0))


@cuda.jit
def _gather(src, idx, bias, out, C, total, has_bias):
    k = cuda.grid(1)
    if k < total:
        r = k // C
        j = k - r * C
        v = src[idx[r] * C + j]
        out[k] = v + bias[j] if has_bias else v


@cuda.jit
def _scatter(src, idx, out, C, total):
    k = cuda.grid(1)
    if k < total:
        r = k // C
        j = k - r * C
        out[idx[r] * C + j] = src[k]


@cuda.jit
def _unrank(src, order, alive, out, C, total):
    k = cuda.grid(1)
    if k < total:
        r = k // C
        j = k - r * C
        out[order[r] * C + j] = src[k] if r < alive else 0


@cuda.jit
def _prev(src, sidx, through, h0, out, C, total, has_h0, mapped):
    k = cuda.grid(1)
    if k < total:
        r = k // C
        j = k - r * C
        p = sidx[r]
        if p >= 0:
            if mapped:
                p = through[p]
            out[k] = src[p * C + j]
        elif has_h0:
            out[k] = h0[(-1 - p) * C + j]
        else:
            out[k] = 0


def gather_rows(src, idx, rows, C, dtype, bias=None):
    """[rows, C]: row r is ``src``'s row idx[r] (+ ``bias``, a [C] row)."""
    out = device_empty((rows, C), dtype)
    launch(_gather, rows * C, src, idx, src if bias is None else bias, out.reshape(-1), C,
           rows * C, bias is not None)
    return out


def scatter_rows(src, idx, out, rows, C):
    """out's row idx[r] = ``src``'s row r, for r < rows."""
    launch(_scatter, rows * C, src, idx, out.reshape(-1), C, rows * C)
    return out


def unrank(src, steps, C, dtype):
    """[sequences, C] from a rank-order [>= sequences, C] buffer: a sequence's row is its
    rank's, zeros for the empty sequences (ranked after the rest)."""
    n = steps.n_seq
    out = device_empty((n, C), dtype)
    launch(_unrank, n * C, src, steps.order, steps.alive[0] if steps.steps else 0,
           out.reshape(-1), C, n * C)
    return out


def prev_rows(src, steps, h0r, C, dtype, through=None):
    """[total, C]: per step-major row, ``src``'s row of the step before (step-major, or
    through the row map ``through``: the step-major row's Input row), ``h0r`` (rank order)
    or zeros at a sequence's first step: the left operand of a weight gradient's one GEMM."""
    out = device_empty((steps.total, C), dtype)
    h0 = src if h0r is None else h0r.reshape(-1)
    launch(_prev, steps.total * C, src, steps.prev, steps.idx if through is None else through,
           h0, out.reshape(-1), C, steps.total * C, h0r is not None, through is not None)
    return out
