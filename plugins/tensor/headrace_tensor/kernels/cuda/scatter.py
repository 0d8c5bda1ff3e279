"""scatter and scatter_grad on CUDA, with the CPU kernel's semantics made deterministic.

Repeated ids: with overwrite the last update of a row wins, so a first launch (one thread per
id) records each row's last id with an atomic max into a per-row "winner" array (and a bad id
into the run's bad-index flag: the CPU kernel's IndexError is raised from it at the end of the
run). Then one thread per element of Out: the winner's update row, or X's row where no id
points. Without overwrite the rows that ids point at start from zero and every update is added
with atomic adds. The gradient reads the same winners: X@GRAD is Out@GRAD with those rows
zeroed, Updates@GRAD the Out@GRAD row of its id (zero for an overwritten repeat).
"""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import device_empty, device_fill, flat, launch, new_flag

from ._common import dense, prod
from .gather import FLOATS, int_index, raise_bad, var_name

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64")


@cuda.jit
def _winners(ids, win, rows, n, bad):
    i = cuda.grid(1)
    if i < n:
        v = ids[i]
        if v < 0 or v >= rows:
            cuda.atomic.min(bad, 0, i)
        else:
            cuda.atomic.max(win, v, i)


@cuda.jit
def _place(x, u, win, out, inner, total, overwrite):
    t = cuda.grid(1)
    if t < total:
        w = win[t // inner]
        if w < 0:
            out[t] = x[t]
        elif overwrite:
            out[t] = u[w * inner + t % inner]
        else:
            out[t] = 0


@cuda.jit
def _add_updates(ids, u, out, rows, inner, total):
    t = cuda.grid(1)
    if t < total:
        v = ids[t // inner]
        if v >= 0 and v < rows:
            cuda.atomic.add(out, v * inner + t % inner, u[t])


@cuda.jit
def _grad_x(g, win, dx, inner, total):
    t = cuda.grid(1)
    if t < total:
        dx[t] = 0 if win[t // inner] >= 0 else g[t]


@cuda.jit
def _grad_updates(ids, g, win, du, rows, inner, total, overwrite):
    t = cuda.grid(1)
    if t < total:
        i = t // inner
        v = ids[i]
        if v < 0 or v >= rows or (overwrite and win[v] != i):
            du[t] = 0
        else:
            du[t] = g[v * inner + t % inner]


class _ScatterBase:
    def __init__(self, attrs, info=None):
        self.overwrite = bool(attrs["overwrite"])
        self.who = var_name(info, "Ids")
        self.info = info

    def _ids(self, ids, xs, us, op):
        int_index(ids, op, self.who)
        ishape = tuple(ids.shape)
        if len(ishape) > 2 or (len(ishape) == 2 and ishape[1] != 1):
            raise ValueError(f"{op}: {self.who} must be 1-D or [N, 1], got shape "
                             f"{list(ishape)}")
        if len(xs) == 0:
            raise ValueError(f"{op}: X must have rank >= 1, got a 0-D tensor")
        expected = ((ishape[0],) if ishape else ()) + xs[1:]
        if us != expected:
            raise ValueError(f"{op}: Updates has shape {list(us)}, expected {list(expected)} "
                             f"(one row of X per id of {self.who})")
        return prod(ishape)

    def _winners(self, ids, rows, n, op):
        """Per row of X the position of its last id, -1 where none; bad ids flagged."""
        win = device_fill(device_empty((max(rows, 1),), np.int64), np.int64(-1))
        if n:
            bad = new_flag(n)
            launch(_winners, n, flat(ids), win, rows, n, bad)
            raise_bad(bad, n, ids, op, self.who, lambda pos: ("dim 0 of X", rows), self.info)
        return win


class Scatter(_ScatterBase):
    def __call__(self, x, ids, updates):
        a = dense(x, "scatter", "X")
        u = dense(updates, "scatter", "Updates")
        if a.dtype != u.dtype:
            raise TypeError(f"scatter: Updates has dtype {u.dtype}, X {a.dtype}")
        xs = tuple(a.shape)
        n = self._ids(ids, xs, tuple(u.shape), "scatter")
        rows, inner = xs[0], prod(xs[1:])
        win = self._winners(ids, rows, n, "scatter")
        out = device_empty(xs, a.dtype)
        total = rows * inner
        launch(_place, total, flat(a), flat(u), win, flat(out), inner, total, self.overwrite)
        if not self.overwrite:
            launch(_add_updates, n * inner, flat(ids), flat(u), flat(out), rows, inner,
                   n * inner)
        return (out,)


class ScatterGrad(_ScatterBase):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info)
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_u = info is None or info.wants("Updates@GRAD")

    def __call__(self, ids, updates, dout):
        op = "scatter_grad"
        g = dense(dout, op, "Out@GRAD")
        if str(g.dtype) not in FLOATS:
            raise TypeError(f"{op}: Out@GRAD has dtype {g.dtype}, expected float32 or float64")
        gs, us = tuple(g.shape), tuple(updates.shape)
        n = self._ids(ids, gs, us, op)
        rows, inner = gs[0], prod(gs[1:])
        win = self._winners(ids, rows, n, op)
        dx = du = None
        if self.want_x:
            dx = device_empty(gs, g.dtype)
            launch(_grad_x, rows * inner, flat(g), win, flat(dx), inner, rows * inner)
        if self.want_u:
            du = device_empty(us, g.dtype)
            launch(_grad_updates, n * inner, flat(ids), flat(g), win, flat(du), rows, inner,
                   n * inner, self.overwrite)
        return dx, du


KERNELS = [("scatter", Scatter, ALL_DTYPES), ("scatter_grad", ScatterGrad, FLOATS)]
