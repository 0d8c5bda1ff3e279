"""layer_norm and layer_norm_grad on CUDA, as the CPU kernel (kernels/cpu/layer_norm.pyx): X is
[left, right] split at begin_norm_axis.

layer_norm runs one block per row: its threads stride over the row's values, the mean and then
the mean squared deviation reduced in float64 shared-memory trees (two passes, as the CPU);
rows of at most SHORT_ROW values run a thread each instead (summed in order, no barriers).
Mean / Variance are stored in X's dtype and Y = (X - mean) * inv * Scale + Bias is computed in
double and rounded once on store. The row kernels are group_norm's (_norm_rows.py), a row's
value j taking column j's Scale / Bias.

layer_norm_grad runs one block per row for X@GRAD (the row's sums of g = dY*Scale and
g*xhat reduced in float64 trees, then each element's inv * (g - sum_g/right - xhat*sum_gx/right))
and one thread per column for Scale@GRAD / Bias@GRAD, walking the rows in order in float64
(consecutive threads read consecutive values of a row: coalesced). Scale and Bias are optional;
an absent one is a one-element dummy plus a flag, as kernels take no None.
"""
import math

import numpy as np
from numba import cuda, float64

from headrace.kernels.cuda_launch import device_empty, empty_like, flat, float_input, launch
from headrace.kernels.cuda_rows import rounded

from ..host._common import wanted
from ..host.layer_norm import GRADS, split_rows
from ._norm_rows import backward_x, forward

DTYPES = ("float32", "float64")


def _param(p, right, x, op, slot):
    if p is None:
        return
    if p.size != right:
        raise ValueError(f"{op}: {slot} holds {p.size} values, a row of X {right}")
    if p.dtype != x.dtype:
        raise TypeError(f"{op}: {slot} has dtype {p.dtype}, expected {x.dtype} (X's)")


@cuda.jit
def _layer_norm_dparams(x, mean, var, dy, ds, db, want_s, want_b, left, right, eps, is32):
    j = cuda.grid(1)
    if j >= right:
        return
    a = float64(0.0)
    b = float64(0.0)
    for i in range(left):
        k = i * right + j
        g = float64(dy[k])
        a += g * (rounded(x[k] - float64(mean[i]), is32)
                  * (1 / math.sqrt(float64(var[i]) + eps)))
        b += g
    if want_s:
        ds[j] = a
    if want_b:
        db[j] = b


class LayerNorm:
    def __init__(self, attrs, info=None):
        self.eps, self.axis = attrs["epsilon"], attrs["begin_norm_axis"]

    def __call__(self, x, scale, bias):
        op = "layer_norm"
        left, right = split_rows(tuple(x.shape), self.axis, op)
        _param(scale, right, x, op, "Scale")
        _param(bias, right, x, op, "Bias")
        float_input(x, op, "X")
        y = empty_like(x)
        mean, var = device_empty((left,), x.dtype), device_empty((left,), x.dtype)
        if x.size:   # rows of the columns' Scale / Bias: channel j is column j
            forward(x, scale, bias, y, mean, var, left, right, 1, 1, 1, self.eps, False, False)
        return y, mean, var


class LayerNormGrad:
    """layer_norm_grad(X, Scale, Bias, Mean, Variance, Y@GRAD) -> (X@GRAD, Scale@GRAD,
    Bias@GRAD)."""

    def __init__(self, attrs, info=None):
        self.eps, self.axis = attrs["epsilon"], attrs["begin_norm_axis"]
        self.want_x, self.want_s, self.want_b = wanted(info, GRADS)

    def __call__(self, x, scale, bias, mean, variance, dy):
        op = "layer_norm_grad"
        float_input(x, op, "X")
        left, right = split_rows(tuple(x.shape), self.axis, op)
        _param(scale, right, x, op, "Scale")
        _param(bias, right, x, op, "Bias")   # checked: its gradient takes its shape
        if mean.size != left or variance.size != left or tuple(dy.shape) != tuple(x.shape):
            raise ValueError(f"{op}: Mean/Variance must hold {left} rows' statistics and "
                             f"Y@GRAD X's shape {list(x.shape)}; found {mean.size}, "
                             f"{variance.size}, {list(dy.shape)}")
        for slot, v in (("Mean", mean), ("Variance", variance), ("Y@GRAD", dy)):
            if v.dtype != x.dtype:
                raise TypeError(f"{op}: {slot} has dtype {v.dtype}, expected {x.dtype} (X's)")
        dx = empty_like(x) if self.want_x else None
        want_s = self.want_s and scale is not None
        want_b = self.want_b and bias is not None
        ds = device_empty(scale.shape, x.dtype) if want_s else None
        db = device_empty(bias.shape, x.dtype) if want_b else None
        dummy = flat(x)
        if dx is not None and x.size:
            backward_x(x, scale, mean, variance, dy, dx, left, right, 1, 1, 1, self.eps,
                       False, x.dtype == np.float32)
        if want_s or want_b:
            launch(_layer_norm_dparams, right, flat(x), flat(mean), flat(variance), flat(dy),
                   dummy if ds is None else flat(ds), dummy if db is None else flat(db),
                   want_s, want_b, left, right, float(self.eps), x.dtype == np.float32)
        return dx, ds, db


KERNELS = [("layer_norm", LayerNorm, DTYPES), ("layer_norm_grad", LayerNormGrad, DTYPES)]
