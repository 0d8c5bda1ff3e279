# cython: language_level=3
"""label_smooth and label_smooth_grad: one fused multiply-add over X in its own dtype, with
Paddle's float32 coefficients (1 - epsilon and epsilon / classes are formed in float32, as
its kernel computes them from the float attribute, then cast to X's type)."""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain

import numpy as np

cnp.import_array()

FLOATS = ("float32", "float64")


cdef object dense(object x, str op, str slot):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: input '{slot}' must be a dense tensor (a NumPy array on the "
                        f"CPU), got {type(x).__name__}")
    check_plain(<cnp.ndarray>x, op, slot)
    if x.dtype.name not in FLOATS:
        raise TypeError(f"{op}: {slot} has dtype {x.dtype.name}; supported: float32, float64")
    return x


cdef class LabelSmooth:
    """label_smooth: (X, PriorDist) -> (Out,)."""
    cdef object eps

    def __init__(self, dict attrs, info=None):
        self.eps = np.float32(attrs.get("epsilon", 0.0))

    def __call__(self, x, prior=None):
        a = dense(x, "label_smooth", "X")
        if a.ndim == 0:
            raise ValueError("label_smooth: X is 0-D; it needs a class dim")
        keep = a.dtype.type(np.float32(1) - self.eps)
        if prior is None:
            # (an empty class dim: nothing to spread over, and nothing to write)
            add = a.dtype.type(self.eps / np.float32(a.shape[-1])) if a.shape[-1] else 0
            return ((keep * a + add).astype(a.dtype, copy=False),)
        p = dense(prior, "label_smooth", "PriorDist")
        if p.dtype != a.dtype:
            raise TypeError(f"label_smooth: PriorDist is {p.dtype.name} but X is "
                            f"{a.dtype.name}")
        if p.size != a.shape[-1]:
            raise ValueError(f"label_smooth: PriorDist {list(p.shape)} must hold one value per "
                             f"class: X {list(a.shape)} has {a.shape[-1]}")
        out = keep * a + a.dtype.type(self.eps) * p.reshape(-1)
        return (out.astype(a.dtype, copy=False),)


cdef class LabelSmoothGrad:
    """label_smooth_grad: (Out@GRAD,) -> (X@GRAD,) = (1 - epsilon) * Out@GRAD."""
    cdef object eps

    def __init__(self, dict attrs, info=None):
        self.eps = np.float32(attrs.get("epsilon", 0.0))

    def __call__(self, dout):
        g = dense(dout, "label_smooth_grad", "Out@GRAD")
        return ((g.dtype.type(np.float32(1) - self.eps) * g).astype(g.dtype, copy=False),)


KERNELS = [("label_smooth", LabelSmooth, FLOATS), ("label_smooth_grad", LabelSmoothGrad, FLOATS)]
