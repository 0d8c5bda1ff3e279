"""top_k and accuracy on CUDA.

top_k is one block per row and k rounds: in round m every thread scans its strided share of
the row for the best element strictly below the one picked in round m - 1, and the
candidates meet in a shared-memory tree; thread 0 writes Out and Indices. "Better" is the CPU
kernel's total order (larger value, NaN above every number, on equal values the lower index),
so the picks are exactly a stable descending sort's, O(k * n) work per row: k is small for
evaluation (top-1/top-5), where a full sort of the row would be wasted. Rows of at most SHORT
values are one thread each, the same rounds in sequence. A K input is read on
the host: it gives Out's shape (the documented exception to "values stay on the device", as
the CPU kernel reads it).

accuracy: one block counts the rows whose top-k Indices hold the Label, threads striding over
rows, the count a shared-memory tree sum; thread 0 writes Accuracy, Correct and Total, so
nothing comes back to the host."""
import numpy as np
from numba import cuda, float64, int64

from headrace.devices.cuda import current_stream, is_array
from headrace.kernels.cuda_launch import ROW_THREADS, device_empty, grid, tree_reduce


@cuda.jit(device=True)
def _better(v, i, w, j):
    """Whether (v, i) comes before (w, j) in top_k's order (j < 0: nothing yet)."""
    if j < 0:
        return True
    if v != v:                            # NaN above every number, NaNs by index
        if w != w:
            return i < j
        return True
    if w != w:
        return False
    if v == w:
        return i < j
    return v > w


def _make_top_k(val_type):
    """The kernel comparing in ``val_type`` (float64; int64 for int64 X, which float64 would
    round above 2**53)."""
    @cuda.jit
    def top_k_kernel(x, vals, idx, n, k):
        row = cuda.blockIdx.x             # one block per row
        t = cuda.threadIdx.x
        base = row * n
        bv = cuda.shared.array(ROW_THREADS, val_type)
        bi = cuda.shared.array(ROW_THREADS, int64)
        pv = val_type(0)
        pi = -1                           # the last pick (none yet)
        for m in range(k):
            w = val_type(0)
            j = -1
            for c in range(t, n, ROW_THREADS):
                v = val_type(x[base + c])
                if (pi < 0 or _better(pv, pi, v, c)) and _better(v, c, w, j):
                    w = v
                    j = c
            bv[t] = w
            bi[t] = j
            cuda.syncthreads()
            step = ROW_THREADS // 2
            while step > 0:
                if t < step and bi[t + step] >= 0 and _better(bv[t + step], bi[t + step],
                                                             bv[t], bi[t]):
                    bv[t] = bv[t + step]
                    bi[t] = bi[t + step]
                cuda.syncthreads()
                step //= 2
            pv = bv[0]
            pi = bi[0]
            if t == 0:
                vals[row * k + m] = x[base + pi]
                idx[row * k + m] = pi
            cuda.syncthreads()            # every thread has read the pick before buf is reused

    @cuda.jit
    def top_k_thread(x, vals, idx, n, k, rows):
        row = cuda.grid(1)                # one thread per row (short rows)
        if row < rows:
            base = row * n
            pv = val_type(0)
            pi = -1
            for m in range(k):
                w = val_type(0)
                j = -1
                for c in range(n):
                    v = val_type(x[base + c])
                    if (pi < 0 or _better(pv, pi, v, c)) and _better(v, c, w, j):
                        w = v
                        j = c
                vals[row * k + m] = x[base + j]
                idx[row * k + m] = j
                pv = w
                pi = j
    return top_k_kernel, top_k_thread


_block_float, _thread_float = _make_top_k(float64)
_block_int, _thread_int = _make_top_k(int64)

# Rows of at most SHORT values are one thread each: a block would idle through k trees.
SHORT = 32


class TopK:
    def __init__(self, attrs, info=None):
        self.k = attrs.get("k", 1)

    def __call__(self, x, k_tensor=None):
        k = self.k
        if k_tensor is not None:
            kt = k_tensor.copy_to_host() if is_array(k_tensor) else np.asarray(k_tensor)
            if kt.size != 1 or kt.dtype.kind not in "iu":
                raise ValueError(f"top_k: K must hold one integer, got {kt.dtype} "
                                 f"shape {list(kt.shape)}")
            k = int(kt.reshape(-1)[0])
        xs = tuple(x.shape)
        if len(xs) < 1:
            raise ValueError("top_k: X must have a last dim to select from, got shape []")
        n = xs[-1]
        rows = 1
        for d in xs[:-1]:
            rows *= d
        if k < 1 or k > n:
            raise ValueError(f"top_k: k={k} must be in [1, {n}] for X{list(xs)}")
        if str(x.dtype) not in ("float32", "float64", "int32", "int64"):
            raise TypeError(f"top_k: X has dtype {x.dtype}, expected float32, float64, "
                            f"int32 or int64")
        vals = device_empty(xs[:-1] + (k,), x.dtype)
        idx = device_empty(xs[:-1] + (k,), np.int64)
        if rows:
            args = (x.reshape(-1), vals.reshape(-1), idx.reshape(-1), n, k)
            is_int = x.dtype == np.int64
            if n <= SHORT:
                blocks, threads = grid(rows, ROW_THREADS)
                (_thread_int if is_int else _thread_float)[blocks, threads, current_stream()](
                    *args, rows)
            else:
                (_block_int if is_int else _block_float)[rows, ROW_THREADS, current_stream()](
                    *args)
        return (vals, idx)


@cuda.jit
def _accuracy(ind, lab, N, k, acc, correct, total):
    t = cuda.threadIdx.x
    buf = cuda.shared.array(ROW_THREADS, float64)
    n = 0
    for i in range(t, N, ROW_THREADS):
        for j in range(k):
            if ind[i, j] == lab[i, 0]:
                n += 1
                break
    buf[t] = n
    cuda.syncthreads()
    tree_reduce(buf, t, False)
    if t == 0:
        c = int(buf[0])
        correct[0] = c
        total[0] = N
        acc[0] = c / N if N else 0.0     # no rows: accuracy 0 rather than 0/0


class Accuracy:
    def __init__(self, attrs, info=None):
        pass

    def __call__(self, out, indices, label):
        for name, arr in (("Indices", indices), ("Label", label)):
            if str(arr.dtype) != "int64":
                raise TypeError(f"accuracy: {name} has dtype {arr.dtype}, expected int64")
        os_, is_, ls = tuple(out.shape), tuple(indices.shape), tuple(label.shape)
        if len(is_) != 2 or os_ != is_:
            raise ValueError(f"accuracy: Out{list(os_)} and Indices{list(is_)} must both be "
                             f"the same [N, k]")
        if ls != (is_[0], 1):
            raise ValueError(f"accuracy: Label{list(ls)} must be [{is_[0]}, 1]")
        stream = current_stream()
        acc = cuda.device_array(1, dtype="float32", stream=stream)
        correct = cuda.device_array(1, dtype="int32", stream=stream)
        total = cuda.device_array(1, dtype="int32", stream=stream)
        _accuracy[1, ROW_THREADS, stream](indices, label, is_[0], is_[1], acc, correct, total)
        return (acc.reshape(()), correct.reshape(()), total.reshape(()))


KERNELS = [("top_k", TopK, ("float32", "float64", "int32", "int64")),
           ("accuracy", Accuracy, ("float16", "float32", "float64"))]
