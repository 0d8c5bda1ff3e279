"""where and where_grad on CUDA: one thread per element selects X or Y by Condition; the
gradient routes Out@GRAD to X@GRAD where Condition holds and to Y@GRAD elsewhere (zeros on the
other side), each only if wanted."""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import empty_like, flat, launch

from ._common import dense

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64")
FLOATS = ("float32", "float64")


def _condition(c, shape, op):
    dense(c, op, "Condition")
    if np.dtype(c.dtype) != np.bool_:
        raise TypeError(f"{op}: Condition must be bool, got {c.dtype}")
    if tuple(c.shape) != shape:
        raise ValueError(f"{op}: Condition has shape {list(c.shape)}, X {list(shape)}: they "
                         f"must be equal")
    return c


@cuda.jit
def _where(c, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i] if c[i] else y[i]


@cuda.jit
def _route(c, g, out, n, keep):
    # out = g where the condition equals keep, else 0
    i = cuda.grid(1)
    if i < n:
        out[i] = g[i] if c[i] == keep else 0


class Where:
    def __init__(self, attrs, info=None):
        pass

    def __call__(self, c, x, y):
        dense(x, "where", "X")
        dense(y, "where", "Y")
        xs, ys = tuple(x.shape), tuple(y.shape)
        if xs != ys:
            raise ValueError(f"where: X has shape {list(xs)}, Y {list(ys)}: they must be equal")
        if x.dtype != y.dtype:
            raise TypeError(f"where: X is {x.dtype}, Y {y.dtype}: they must be equal")
        _condition(c, xs, "where")
        out = empty_like(x)
        launch(_where, x.size, flat(c), flat(x), flat(y), flat(out), x.size)
        return (out,)


class WhereGrad:
    def __init__(self, attrs, info=None):
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_y = info is None or info.wants("Y@GRAD")

    def __call__(self, c, x, y, dout):
        g = dense(dout, "where_grad", "Out@GRAD")
        _condition(c, tuple(g.shape), "where_grad")
        outs = []
        for want, keep in ((self.want_x, True), (self.want_y, False)):
            if not want:
                outs.append(None)
                continue
            out = empty_like(g)
            launch(_route, g.size, flat(c), flat(g), flat(out), g.size, keep)
            outs.append(out)
        return tuple(outs)


KERNELS = [("where", Where, ALL_DTYPES), ("where_grad", WhereGrad, FLOATS)]
