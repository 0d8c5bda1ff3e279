"""lookup_table and lookup_table_v2 (and grads) on CUDA: Out[i] = W[Ids[i]], zeros at
padding_idx; one thread per output element, so a warp reads a row of W in order.

The gradient zero-fills the dense [V, D] W@GRAD and scatter-adds each Out@GRAD row at its id
with atomic adds (repeated ids accumulate; padding_idx adds nothing). A bad id is never used to
read or write: its position goes to a one-element device flag (atomic min), read back once
after the launch to raise the CPU kernel's IndexError.
"""
import numpy as np
from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import check_flag, flat, grid, new_flag

DTYPES = ("float32", "float64")


@cuda.jit
def _gather(w, ids, out, V, D, total, pad, bad):
    k = cuda.grid(1)
    if k < total:
        i = k // D
        j = ids[i]
        if pad >= 0 and j == pad:
            out[k] = 0
        elif j < 0 or j >= V:
            if k % D == 0:
                cuda.atomic.min(bad, 0, i)
        else:
            out[k] = w[j * D + k % D]


@cuda.jit
def _zero(a, n):
    k = cuda.grid(1)
    if k < n:
        a[k] = 0


@cuda.jit
def _scatter(dy, ids, dw, V, D, total, pad, bad):
    k = cuda.grid(1)
    if k < total:
        i = k // D
        j = ids[i]
        if pad >= 0 and j == pad:
            return
        if j < 0 or j >= V:
            if k % D == 0:
                cuda.atomic.min(bad, 0, i)
            return
        cuda.atomic.add(dw, j * D + k % D, dy[k])


class _Lookup:
    def _check(self, name, w, ids):
        if str(w.dtype) not in DTYPES:
            raise TypeError(f"{name}: W has dtype {w.dtype}, expected float32 or float64")
        it = str(ids.dtype)
        if not (it == "int64" or (self.v2 and it == "int32")):
            raise TypeError(f"{name}: Ids has dtype {ids.dtype}, expected int64"
                            + (" or int32" if self.v2 else ""))
        ws, xs = tuple(w.shape), tuple(ids.shape)
        if len(ws) != 2:
            raise ValueError(f"{name}: W{list(ws)} must be 2-D [V, D]")
        V, D = ws
        if self.pad != -1 and not 0 <= self.pad < V:
            raise ValueError(f"{name}: padding_idx {self.pad} is not a row of W{list(ws)}")
        if self.v2:
            return V, D, xs + (D,)
        if len(xs) < 1 or xs[-1] != 1:
            raise ValueError(f"{name}: Ids{list(xs)} must end in a dim of 1")
        return V, D, xs[:-1] + (D,)

    def _raise_bad(self, bad, n, ids, V, name, stream):
        def report(pos):   # only when an id was bad: its value is read back for the message
            value = int(flat(ids)[pos:pos + 1].copy_to_host()[0])
            return IndexError(f"{name}: id {value} (position {pos}) is out of range for W with "
                              f"{V} rows")
        check_flag(bad, n, report, self.info)


class LookupTable(_Lookup):
    def __init__(self, attrs, info=None, v2=False):
        self.info = info
        self.v2 = v2
        self.name = "lookup_table_v2" if v2 else "lookup_table"
        self.pad = attrs.get("padding_idx", -1)

    def __call__(self, w, ids):
        V, D, oshape = self._check(self.name, w, ids)
        stream = current_stream()
        out = cuda.device_array(oshape, dtype=w.dtype, stream=stream)
        n = int(np.prod(ids.shape, dtype=np.int64))
        if n * D:
            bad = new_flag(n)
            blocks, threads = grid(n * D)
            _gather[blocks, threads, stream](flat(w), flat(ids), flat(out), V, D, n * D,
                                             self.pad, bad)
            self._raise_bad(bad, n, ids, V, self.name, stream)
        return (out,)


def lookup_table_v2(attrs, info=None):
    return LookupTable(attrs, info, True)


class LookupTableGrad(_Lookup):
    """lookup_table_grad / lookup_table_v2_grad(W, Ids, Out@GRAD) -> (W@GRAD,)."""

    def __init__(self, attrs, info=None, v2=False):
        self.info = info
        self.v2 = v2
        self.name = "lookup_table_v2_grad" if v2 else "lookup_table_grad"
        self.pad = attrs.get("padding_idx", -1)
        self.want = info is None or info.wants("W@GRAD")

    def __call__(self, w, ids, dout):
        name = self.name
        if str(dout.dtype) not in DTYPES:
            raise TypeError(f"{name}: Out@GRAD has dtype {dout.dtype}, expected float32 or "
                            "float64")
        V, D, oshape = self._check(name, w, ids)
        if dout.dtype != w.dtype:
            raise TypeError(f"{name}: Out@GRAD has dtype {dout.dtype} but W is {w.dtype}")
        if tuple(dout.shape) != oshape:
            raise ValueError(f"{name}: Out@GRAD has shape {list(dout.shape)}, expected "
                             f"{list(oshape)} (Out's shape)")
        if not self.want:
            return (None,)
        stream = current_stream()
        dw = cuda.device_array((V, D), dtype=w.dtype, stream=stream)
        if V * D:
            blocks, threads = grid(V * D)
            _zero[blocks, threads, stream](flat(dw), V * D)
        n = int(np.prod(ids.shape, dtype=np.int64))
        if n * D:
            bad = new_flag(n)
            blocks, threads = grid(n * D)
            _scatter[blocks, threads, stream](flat(dout), flat(ids), flat(dw), V, D, n * D,
                                              self.pad, bad)
            self._raise_bad(bad, n, ids, V, name, stream)
        return (dw,)


def lookup_table_v2_grad(attrs, info=None):
    return LookupTableGrad(attrs, info, True)


KERNELS = [("lookup_table", LookupTable, DTYPES),
           ("lookup_table_v2", lookup_table_v2, DTYPES),
           ("lookup_table_grad", LookupTableGrad, DTYPES),
           ("lookup_table_v2_grad", lookup_table_v2_grad, DTYPES)]
