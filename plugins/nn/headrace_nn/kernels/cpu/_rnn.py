"""What the recurrent kernels (lstm, gru) share on the Python side: the step-major layout of a
batch of sequences, checked operands, the activations' codes (``_common.pxd`` has the
activations themselves) and the arrays a kernel hands out again. A private module: kernel
registration skips it."""
import sys

import numpy as np

ACTIVATIONS = {"sigmoid": 0, "tanh": 1, "relu": 2, "identity": 3}


def checked(value, dtype, shape, op, slot):
    """``value`` as a C-contiguous array of ``dtype`` and ``shape``, or a clear error (a
    wrong shape would read past the buffers)."""
    a = np.asarray(getattr(value, "data", value))
    if a.dtype != dtype:
        raise TypeError(f"{op}: {slot} has dtype {a.dtype}, Input is {dtype}")
    if a.shape != shape:
        raise ValueError(f"{op}: {slot} has shape {list(a.shape)}, expected {list(shape)}")
    return np.ascontiguousarray(a)


def layout(lod, rows, reverse, op="lstm"):
    """(order, alive, first, idx): sequences by rank, running sequences per step, each step's
    first step-major row, and the Input row of every step-major row."""
    if not lod:
        raise ValueError(f"{op}: Input must be a batch of sequences (a tensor with LoD)")
    offsets = np.asarray(lod[-1], np.int64)
    if offsets[-1] != rows:
        raise ValueError(f"{op}: Input's LoD ends at {offsets[-1]}, Input has {rows} rows")
    lengths = np.diff(offsets)
    order = np.argsort(-lengths, kind="stable")
    ranked = lengths[order]
    steps = int(ranked[0]) if len(ranked) else 0
    alive = np.searchsorted(-ranked, -np.arange(steps), side="left").astype(np.int64)
    first = np.cumsum(alive) - alive
    step = np.repeat(np.arange(steps), alive)
    seq = order[np.arange(int(alive.sum())) - np.repeat(first, alive)]
    pos = lengths[seq] - 1 - step if reverse else step
    return order, alive, first, offsets[seq] + pos


def activate(code, v):
    """Apply activation ``code`` to ``v`` in place (NumPy's vectorized loops: the cells'
    transcendental functions are most of their work)."""
    if code == 0:
        with np.errstate(over="ignore"):  # exp(-x) of a very negative x: 1 / inf = 0
            np.negative(v, out=v)
            np.exp(v, out=v)
        v += 1
        np.reciprocal(v, out=v)
    elif code == 1:
        np.tanh(v, out=v)
    elif code == 2:
        np.maximum(v, 0, out=v)
    return v


def derivative(code, y):
    """The activation's derivative from its output ``y`` (a new array)."""
    if code == 0:
        return y * (1 - y)
    if code == 1:
        return 1 - y * y
    if code == 2:
        return (y > 0).astype(y.dtype)
    return np.ones_like(y)


def _popped(spare, key):
    """(the array ``spare`` kept under ``key``, taken out, or None; its reference count seen
    from here)."""
    a = spare.pop(key, None)
    return a, (0 if a is None else sys.getrefcount(a))


# The count of an array nothing else holds, as _popped sees it. None where threads run without
# a GIL: there a count read in one thread does not exclude another's use, so nothing is reused.
_GIL = getattr(sys, "_is_gil_enabled", lambda: True)()
ALONE = _popped({0: np.empty(0)}, 0)[1] if _GIL else None


def reused(spare, key, shape, dtype):
    """A C-contiguous array of ``shape`` and ``dtype`` (contents undefined) for a kernel whose
    arrays ``spare`` (a dict of its own) keeps: the one it handed out under ``key`` last time
    if nothing holds it any more (the run that used it is over: the executor drops a run's
    values and copies what it fetches), else a new one; kept for the next call either way.
    Why: a new array of a megabyte or more is new pages from the system, each faulted in and
    zeroed as the kernel first writes it, a tenth of an LSTM training step's time at the
    benchmark's sizes. Arrays still held (kept by a caller, in a scope, through a view,
    another thread's call under way) are never handed out again."""
    a, count = _popped(spare, key)
    if a is None or count != ALONE or a.shape != shape or a.dtype != dtype:
        a = np.empty(shape, dtype)
    spare[key] = a
    return a
