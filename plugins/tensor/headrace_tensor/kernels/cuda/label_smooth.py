"""label_smooth and label_smooth_grad on CUDA: one thread per element, a multiply-add in X's
dtype with the CPU kernel's coefficients (Paddle's: 1 - epsilon and epsilon / classes formed
in float32, then cast to X's type)."""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import empty_like, flat, launch

from ._common import dense

FLOATS = ("float32", "float64")


def checked(x, op, slot):
    dense(x, op, slot)
    if str(x.dtype) not in FLOATS:
        raise TypeError(f"{op}: {slot} has dtype {x.dtype}; supported: float32, float64")
    return x


@cuda.jit
def _uniform(x, out, keep, add, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = keep * x[i] + add


@cuda.jit
def _prior(x, p, out, keep, eps, classes, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = keep * x[i] + eps * p[i % classes]


class LabelSmooth:
    """label_smooth: (X, PriorDist) -> (Out,)."""

    def __init__(self, attrs, info=None):
        self.eps = np.float32(attrs.get("epsilon", 0.0))

    def __call__(self, x, prior=None):
        a = checked(x, "label_smooth", "X")
        if len(a.shape) == 0:
            raise ValueError("label_smooth: X is 0-D; it needs a class dim")
        t = np.dtype(a.dtype).type
        keep = t(np.float32(1) - self.eps)
        classes = tuple(a.shape)[-1]
        out = empty_like(a)
        if prior is None:
            add = t(self.eps / np.float32(classes)) if classes else t(0)
            launch(_uniform, a.size, flat(a), flat(out), keep, add, a.size)
            return (out,)
        p = checked(prior, "label_smooth", "PriorDist")
        if p.dtype != a.dtype:
            raise TypeError(f"label_smooth: PriorDist is {p.dtype} but X is {a.dtype}")
        if p.size != classes:
            raise ValueError(f"label_smooth: PriorDist {list(p.shape)} must hold one value per "
                             f"class: X {list(a.shape)} has {classes}")
        launch(_prior, a.size, flat(a), flat(p), flat(out), keep, t(self.eps), classes, a.size)
        return (out,)


class LabelSmoothGrad:
    """label_smooth_grad: (Out@GRAD,) -> (X@GRAD,) = (1 - epsilon) * Out@GRAD."""

    def __init__(self, attrs, info=None):
        self.eps = np.float32(attrs.get("epsilon", 0.0))

    def __call__(self, dout):
        g = checked(dout, "label_smooth_grad", "Out@GRAD")
        t = np.dtype(g.dtype).type
        out = empty_like(g)
        launch(_uniform, g.size, flat(g), flat(out), t(np.float32(1) - self.eps), t(0), g.size)
        return (out,)


KERNELS = [("label_smooth", LabelSmooth, FLOATS), ("label_smooth_grad", LabelSmoothGrad, FLOATS)]
