"""cross_entropy, softmax_with_cross_entropy and their grads on CUDA (hard and soft labels,
ignore_index; softmax_with_cross_entropy with axis and use_softmax as the CPU kernel).

Hard labels: one thread per row. An id out of range is never used to read: the thread records
its row with an atomic min in a one-element device flag, and the kernel reads that flag back
once after the launch (the documented one-element read) to raise the CPU kernel's IndexError.
Soft labels: one block per row, the sum over classes a shared-memory tree reduction in float64.
The gradient writes every element of X@GRAD in one launch (zeros off the label), so nothing is
zero-filled separately.
"""
import math

import numpy as np
from numba import cuda, float64, int64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, check_flag, flat, float_input, grid,
                                          new_flag)
from headrace.kernels.cuda_rows import block_reduce

DTYPES = ("float32", "float64")


@cuda.jit
def _hard(x, lab, y, match, N, C, ignore, bad, v2):
    # v2 (cross_entropy2) also keeps MatchX[i] = X[i, label], all its gradient reads.
    i = cuda.grid(1)
    if i < N:
        lv = lab[i]
        if lv == ignore:
            y[i] = 0
            if v2:
                match[i] = 0
        elif lv < 0 or lv >= C:
            cuda.atomic.min(bad, 0, i)
        else:
            p = x[i * C + lv]
            y[i] = -math.log(float64(p))
            if v2:
                match[i] = p


@cuda.jit
def _soft(x, lab, y, C):
    i = cuda.blockIdx.x
    t = cuda.threadIdx.x
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = 0.0
    for c in range(t, C, ROW_THREADS):
        s -= float64(lab[i * C + c]) * math.log(float64(x[i * C + c]))
    s = block_reduce(buf, s, False)
    if t == 0:
        y[i] = s


@cuda.jit
def _hard_grad(x, lab, dy, dx, N, C, ignore, bad, matched):
    # matched (cross_entropy_grad2): x is MatchX [N], X[i, label] already picked.
    k = cuda.grid(1)
    if k < N * C:
        i = k // C
        lv = lab[i]
        v = 0.0
        if lv != ignore:
            if lv < 0 or lv >= C:
                if k % C == 0:
                    cuda.atomic.min(bad, 0, i)
            elif k % C == lv:
                v = -dy[i] / (x[i] if matched else x[k])
        dx[k] = v


@cuda.jit
def _soft_grad(x, lab, dy, dx, C, total):
    k = cuda.grid(1)
    if k < total:
        dx[k] = -lab[k] * dy[k // C] / x[k]


def _int64_labels(lab, op):
    if str(lab.dtype) != "int64":
        raise TypeError(f"{op}: hard Label has dtype {lab.dtype}, expected int64")
    return lab


def _hard_label_shape(xs, ls, op):
    """Y's shape for hard labels [..., 1] (-> [..., 1]) or [...] (-> [...])."""
    lead = xs[:-1]
    if len(ls) == len(xs) and ls[:-1] == lead and ls[-1] == 1:
        return lead + (1,)
    if ls == lead:
        return lead
    raise ValueError(f"{op}: hard Label{list(ls)} does not fit X{list(xs)}: expected "
                     f"{list(lead + (1,))} or {list(lead)}")


def _check_flag(bad, N, lab, C, ignore, op, info, what="row"):
    def report(pos):   # only when a label was bad: its value is read back for the message
        value = int(flat(lab)[pos:pos + 1].copy_to_host()[0])
        return IndexError(f"{op}: Label value {value} ({what} {pos}) is out of range for {C} "
                          f"classes (ignore_index={ignore})")
    check_flag(bad, N, report, info)


def _check_soft(lab, x, op):
    if lab.dtype != x.dtype:
        raise TypeError(f"{op}: soft Label has dtype {lab.dtype}, expected X's {x.dtype}")
    if tuple(lab.shape) != tuple(x.shape):
        raise ValueError(f"{op}: soft Label{list(lab.shape)} must have X's shape "
                         f"{list(x.shape)}")


class CrossEntropy:
    """cross_entropy (hard or soft labels) and, with ``v2``, cross_entropy2."""

    def __init__(self, attrs, info=None, v2=False):
        self.info = info
        self.v2 = v2
        self.name = "cross_entropy2" if v2 else "cross_entropy"
        self.soft = False if v2 else attrs.get("soft_label", False)
        self.ignore = attrs.get("ignore_index", -100)

    def __call__(self, x, label):
        name = self.name
        float_input(x, name, "X")
        xs = tuple(x.shape)
        if len(xs) < 1:
            raise ValueError(f"{name}: X must have a class dimension, got shape []")
        C, N = xs[-1], int(np.prod(xs[:-1], dtype=np.int64))
        stream = current_stream()
        if self.soft:
            _check_soft(label, x, name)
            y = cuda.device_array(xs[:-1] + (1,), dtype=x.dtype, stream=stream)
            if N:
                _soft[N, ROW_THREADS, stream](flat(x), flat(label), flat(y), C)
            return (y,)
        _int64_labels(label, name)
        y = cuda.device_array(_hard_label_shape(xs, tuple(label.shape), name), dtype=x.dtype,
                              stream=stream)
        match = cuda.device_array(xs[:-1] + (1,), dtype=x.dtype, stream=stream)
        if N:
            bad = new_flag(N)
            blocks, threads = grid(N)
            _hard[blocks, threads, stream](flat(x), flat(label), flat(y), flat(match), N, C,
                                           self.ignore, bad, self.v2)
            _check_flag(bad, N, label, C, self.ignore, name, self.info)
        if not self.v2:
            return (y,)
        # XShape carries X's dims (and a trailing 0) to the gradient: it holds no data.
        return (y, cuda.device_array(xs + (0,), dtype=x.dtype, stream=stream), match)


def cross_entropy2(attrs, info=None):
    return CrossEntropy(attrs, info, True)


class CrossEntropyGrad:
    """cross_entropy_grad(X, Label, Y@GRAD) -> (X@GRAD,)."""

    def __init__(self, attrs, info=None):
        self.info = info
        self.soft = attrs.get("soft_label", False)
        self.ignore = attrs.get("ignore_index", -100)
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, x, label, dy):
        name = "cross_entropy_grad"
        float_input(x, name, "X")
        float_input(dy, name, "Y@GRAD")
        if dy.dtype != x.dtype:
            raise TypeError(f"{name}: Y@GRAD has dtype {dy.dtype}, expected {x.dtype} "
                            "(the dtype of X)")
        xs = tuple(x.shape)
        if len(xs) < 1:
            raise ValueError(f"{name}: X must have a class dimension, got shape []")
        C, N = xs[-1], int(np.prod(xs[:-1], dtype=np.int64))
        if self.soft:
            _check_soft(label, x, name)
            want = xs[:-1] + (1,)
        else:
            _int64_labels(label, name)
            want = _hard_label_shape(xs, tuple(label.shape), name)
        if tuple(dy.shape) != want:
            raise ValueError(f"{name}: Y@GRAD has shape {list(dy.shape)}, expected "
                             f"{list(want)} (Y's shape)")
        if not self.want:
            return (None,)
        stream = current_stream()
        dx = cuda.device_array(xs, dtype=x.dtype, stream=stream)
        if N * C == 0:
            return (dx,)
        blocks, threads = grid(N * C)
        if self.soft:
            _soft_grad[blocks, threads, stream](flat(x), flat(label), flat(dy), flat(dx), C,
                                                N * C)
            return (dx,)
        bad = new_flag(N)
        _hard_grad[blocks, threads, stream](flat(x), flat(label), flat(dy), flat(dx), N, C,
                                            self.ignore, bad, False)
        _check_flag(bad, N, label, C, self.ignore, name, self.info)
        return (dx,)


class CrossEntropyGrad2:
    """cross_entropy_grad2(MatchX, Label, XShape, Y@GRAD) -> (X@GRAD,)."""

    def __init__(self, attrs, info=None):
        self.info = info
        self.ignore = attrs.get("ignore_index", -100)
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, matchx, label, xshape, dy):
        name = "cross_entropy_grad2"
        for slot, a in (("MatchX", matchx), ("Y@GRAD", dy), ("XShape", xshape)):
            float_input(a, name, slot)
            if a.dtype != matchx.dtype:
                raise TypeError(f"{name}: {slot} has dtype {a.dtype}, expected "
                                f"{matchx.dtype} (the dtype of MatchX)")
        full = tuple(xshape.shape)
        if len(full) < 2 or full[-1] != 0:
            raise ValueError(f"{name}: XShape{list(full)} must be X.dims + [0] with X of "
                             f"rank >= 1")
        xs = full[:-1]
        C, N = xs[-1], int(np.prod(xs[:-1], dtype=np.int64))
        _int64_labels(label, name)
        if tuple(matchx.shape) != xs[:-1] + (1,):
            raise ValueError(f"{name}: MatchX has shape {list(matchx.shape)}, expected "
                             f"{list(xs[:-1] + (1,))} (the shape)")
        want = _hard_label_shape(xs, tuple(label.shape), name)
        if tuple(dy.shape) != want:
            raise ValueError(f"{name}: Y@GRAD has shape {list(dy.shape)}, expected "
                             f"{list(want)} (Y's shape)")
        if not self.want:
            return (None,)
        stream = current_stream()
        dx = cuda.device_array(xs, dtype=matchx.dtype, stream=stream)
        if N * C == 0:
            return (dx,)
        bad = new_flag(N)
        blocks, threads = grid(N * C)
        _hard_grad[blocks, threads, stream](flat(matchx), flat(label), flat(dy), flat(dx), N, C,
                                            self.ignore, bad, True)
        _check_flag(bad, N, label, C, self.ignore, name, self.info)
        return (dx,)


# -- softmax_with_cross_entropy: one block per softmax of the [outer, C, inner] view ------------

@cuda.jit
def _swce(x, lab, sm, loss, C, inner, hard, ignore, use_softmax, bad):
    row = cuda.blockIdx.x                 # the position k = o * inner + i of Loss
    t = cuda.threadIdx.x
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    lse = 0.0                             # log(sum exp x), read only with use_softmax
    if use_softmax:
        m = -math.inf
        for c in range(t, C, ROW_THREADS):
            if x[base + c * inner] > m:
                m = x[base + c * inner]
        m = block_reduce(buf, m, True)
        s = 0.0
        for c in range(t, C, ROW_THREADS):
            e = math.exp(float64(x[base + c * inner]) - m)
            sm[base + c * inner] = e
            s += e
        s = block_reduce(buf, s, False)
        lse = m + math.log(s)             # log p = x - lse: a hard loss never logs an underflow
        for c in range(t, C, ROW_THREADS):
            sm[base + c * inner] = sm[base + c * inner] / s
        cuda.syncthreads()
    else:
        for c in range(t, C, ROW_THREADS):
            sm[base + c * inner] = x[base + c * inner]
    if hard:
        if t == 0:
            # int64(): `hard` is a run-time argument, so this branch is typed for soft (float)
            # labels too, where a float index would not compile on a real GPU.
            lv = int64(lab[row])
            if lv == ignore:
                loss[row] = 0
            elif lv < 0 or lv >= C:
                cuda.atomic.min(bad, 0, row)
            elif use_softmax:
                loss[row] = lse - x[base + lv * inner]
            else:
                loss[row] = -math.log(float64(x[base + lv * inner]))
    else:
        acc = 0.0
        for c in range(t, C, ROW_THREADS):
            k = base + c * inner
            if use_softmax:
                acc += lab[k] * (lse - x[k])
            else:
                acc -= lab[k] * math.log(float64(x[k]))
        acc = block_reduce(buf, acc, False)
        if t == 0:
            loss[row] = acc


@cuda.jit
def _swce_grad(sm, lab, dl, dx, C, inner, hard, ignore, use_softmax, bad):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    d = dl[row]
    if hard:
        lv = int64(lab[row])             # typed for soft labels too (see _swce)
        skip = lv == ignore
        if not skip and (lv < 0 or lv >= C):
            if t == 0:
                cuda.atomic.min(bad, 0, row)
            skip = True
        for c in range(t, C, ROW_THREADS):
            k = base + c * inner
            if skip:
                dx[k] = 0
            elif use_softmax:
                dx[k] = sm[k] * d - (d if c == lv else 0)
            else:
                dx[k] = -d / sm[k] if c == lv else 0
    elif use_softmax:
        # (Softmax * sum(Label) - Label) * d: Paddle's (Softmax - Label) * d for distributions.
        tot = 0.0
        for c in range(t, C, ROW_THREADS):
            tot += lab[base + c * inner]
        tot = block_reduce(buf, tot, False)
        for c in range(t, C, ROW_THREADS):
            k = base + c * inner
            dx[k] = (sm[k] * tot - lab[k]) * d
    else:
        for c in range(t, C, ROW_THREADS):
            k = base + c * inner
            dx[k] = -lab[k] * d / sm[k]


def _swce_labels(label, x, xs, axis, soft, name, what):
    if soft:
        if label.dtype != x.dtype:
            raise TypeError(f"{name}: soft Label has dtype {label.dtype}, expected "
                            f"{what}' {x.dtype}")
        if tuple(label.shape) != xs:
            raise ValueError(f"{name}: soft Label{list(label.shape)} must have {what}' "
                             f"shape {list(xs)}")
        return
    if str(label.dtype) not in ("int64", "int32"):
        raise TypeError(f"{name}: hard Label has dtype {label.dtype}, expected int64 or int32")
    want = xs[:axis] + (1,) + xs[axis + 1:]
    if tuple(label.shape) != want:
        raise ValueError(f"{name}: hard Label{list(label.shape)} must be {list(want)} "
                         f"({what}{list(xs)}, axis {axis})")


def _axis(xs, axis, name, what):
    rank = len(xs)
    if rank < 1:
        raise ValueError(f"{name}: {what} must have a class dimension, got shape []")
    if not -rank <= axis < rank:
        raise ValueError(f"{name}: axis {axis} is out of range for {what}{list(xs)}")
    return axis + rank if axis < 0 else axis


class SoftmaxWithCrossEntropy:
    def __init__(self, attrs, info=None):
        self.info = info
        self.soft = attrs.get("soft_label", False)
        self.ignore = attrs.get("ignore_index", -100)
        self.axis = attrs.get("axis", -1)
        self.use_softmax = attrs.get("use_softmax", True)

    def __call__(self, logits, label):
        name = "softmax_with_cross_entropy"
        float_input(logits, name, "Logits")
        xs = tuple(logits.shape)
        axis = _axis(xs, self.axis, name, "Logits")
        _swce_labels(label, logits, xs, axis, self.soft, name, "Logits")
        outer, C = int(np.prod(xs[:axis], dtype=np.int64)), xs[axis]
        inner = int(np.prod(xs[axis + 1:], dtype=np.int64))
        stream = current_stream()
        sm = cuda.device_array(xs, dtype=logits.dtype, stream=stream)
        loss = cuda.device_array(xs[:axis] + (1,) + xs[axis + 1:], dtype=logits.dtype,
                                 stream=stream)
        n = outer * inner
        if C == 0 and n > 0:
            raise ValueError(f"{name}: Logits{list(xs)} has no classes on axis {axis}")
        if n == 0:
            return (sm, loss)
        bad = new_flag(n)
        _swce[n, ROW_THREADS, stream](flat(logits), flat(label), flat(sm), flat(loss), C, inner,
                                      not self.soft, self.ignore, self.use_softmax, bad)
        if not self.soft:
            _check_flag(bad, n, label, C, self.ignore, name, self.info, "position")
        return (sm, loss)


class SoftmaxWithCrossEntropyGrad:
    """softmax_with_cross_entropy_grad(Softmax, Label, Loss@GRAD) -> (Logits@GRAD,)."""

    def __init__(self, attrs, info=None):
        self.info = info
        self.soft = attrs.get("soft_label", False)
        self.ignore = attrs.get("ignore_index", -100)
        self.axis = attrs.get("axis", -1)
        self.use_softmax = attrs.get("use_softmax", True)
        self.want = info is None or info.wants("Logits@GRAD")

    def __call__(self, softmax, label, dloss):
        name = "softmax_with_cross_entropy_grad"
        float_input(softmax, name, "Softmax")
        float_input(dloss, name, "Loss@GRAD")
        if dloss.dtype != softmax.dtype:
            raise TypeError(f"{name}: Loss@GRAD has dtype {dloss.dtype}, expected "
                            f"{softmax.dtype} (the dtype of Softmax)")
        xs = tuple(softmax.shape)
        axis = _axis(xs, self.axis, name, "Softmax")
        lshape = xs[:axis] + (1,) + xs[axis + 1:]
        if tuple(dloss.shape) != lshape:
            raise ValueError(f"{name}: Loss@GRAD has shape {list(dloss.shape)}, expected "
                             f"{list(lshape)} (Loss's shape)")
        _swce_labels(label, softmax, xs, axis, self.soft, name, "Softmax")
        if not self.want:
            return (None,)
        outer, C = int(np.prod(xs[:axis], dtype=np.int64)), xs[axis]
        inner = int(np.prod(xs[axis + 1:], dtype=np.int64))
        stream = current_stream()
        dx = cuda.device_array(xs, dtype=softmax.dtype, stream=stream)
        n = outer * inner
        if n * C == 0:
            return (dx,)
        bad = new_flag(n)
        _swce_grad[n, ROW_THREADS, stream](flat(softmax), flat(label), flat(dloss), flat(dx),
                                           C, inner, not self.soft, self.ignore,
                                           self.use_softmax, bad)
        if not self.soft:
            _check_flag(bad, n, label, C, self.ignore, name, self.info, "position")
        return (dx,)


KERNELS = [("cross_entropy", CrossEntropy, DTYPES),
           ("cross_entropy_grad", CrossEntropyGrad, DTYPES),
           ("cross_entropy2", cross_entropy2, DTYPES),
           ("cross_entropy_grad2", CrossEntropyGrad2, DTYPES),
           ("softmax_with_cross_entropy", SoftmaxWithCrossEntropy, DTYPES),
           ("softmax_with_cross_entropy_grad", SoftmaxWithCrossEntropyGrad, DTYPES)]
