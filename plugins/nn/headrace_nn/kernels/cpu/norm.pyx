# cython: language_level=3
"""norm and its gradient: NumPy's reductions along the axis (sums in double for float32)."""
import numpy as np

DTYPES = ("float32", "float64")


def _axis(int axis, int rank, op):
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is not a dim of X (rank {rank})")
    return axis + rank if axis < 0 else axis


cdef class Norm:
    cdef int axis
    cdef double eps

    def __init__(self, dict attrs, info=None):
        self.axis, self.eps = attrs["axis"], attrs["epsilon"]

    def __call__(self, x):
        a = np.asarray(x)
        ax = _axis(self.axis, a.ndim, "norm")
        n = np.sqrt(np.square(a, dtype=np.float64).sum(axis=ax, keepdims=True) + self.eps)
        return ((a / n).astype(a.dtype), n.astype(a.dtype))


cdef class NormGrad:
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.axis = attrs["axis"]

    def __call__(self, x, norm, dout):
        a = np.asarray(x)
        ax = _axis(self.axis, a.ndim, "norm_grad")
        n = np.asarray(norm, np.float64)
        g = np.asarray(dout, np.float64)
        want = a.shape[:ax] + (1,) + a.shape[ax + 1:]
        if n.shape != want or g.shape != a.shape:
            raise ValueError(f"norm_grad: Norm must be {list(want)} and Out@GRAD "
                             f"{list(a.shape)}; found {list(n.shape)}, {list(g.shape)}")
        with np.errstate(divide="ignore", invalid="ignore"):  # a zero Norm: inf, as divided
            out = a / n
            dx = (g - out * (g * out).sum(axis=ax, keepdims=True)) / n
        return (dx.astype(a.dtype),)


KERNELS = [("norm", Norm, DTYPES), ("norm_grad", NormGrad, DTYPES)]
