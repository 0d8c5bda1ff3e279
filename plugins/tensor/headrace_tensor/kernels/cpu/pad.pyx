# cython: language_level=3
"""pad and pad_grad. pad fills a new array with pad_value and copies X into its middle;
pad_grad copies the middle of Out@GRAD out."""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain

import numpy as np

cnp.import_array()

PAD_DTYPES = ("float32", "float64", "int32", "int64", "complex64", "complex128")
GRAD_DTYPES = ("float32", "float64")


cdef object dense(object x, str op, str slot, tuple dtypes):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: input '{slot}' must be a dense tensor (a NumPy array on the "
                        f"CPU), got {type(x).__name__}")
    check_plain(<cnp.ndarray>x, op, slot)
    if x.dtype.name not in dtypes:
        raise TypeError(f"{op}: {slot} has dtype {x.dtype.name}; supported: "
                        f"{', '.join(dtypes)}")
    return x


cdef tuple middle(list paddings, tuple shape, str op, str slot):
    """The index of the unpadded part of a padded tensor of ``shape``."""
    if len(paddings) != 2 * len(shape):
        raise ValueError(f"{op}: {len(paddings)} paddings {paddings} for a {slot} of rank "
                         f"{len(shape)} (two per dim)")
    if any(p < 0 for p in paddings):
        raise ValueError(f"{op}: paddings {paddings} must all be >= 0")
    return tuple(slice(paddings[2 * i], n - paddings[2 * i + 1])
                 for i, n in enumerate(shape))


cdef class Pad:
    """pad: (X,) -> (Out,)."""
    cdef list paddings
    cdef double value

    def __init__(self, dict attrs, info=None):
        self.paddings = [int(p) for p in attrs["paddings"]]
        self.value = attrs.get("pad_value", 0.0)

    def __call__(self, x):
        a = dense(x, "pad", "X", PAD_DTYPES)
        if len(self.paddings) != 2 * a.ndim:
            raise ValueError(f"pad: {len(self.paddings)} paddings {self.paddings} for an X of "
                             f"rank {a.ndim} (two per dim)")
        shape = tuple(n + self.paddings[2 * i] + self.paddings[2 * i + 1]
                      for i, n in enumerate(a.shape))
        value = self.value
        if a.dtype.kind == "i":
            info = np.iinfo(a.dtype)
            if not (info.min <= value <= info.max):      # (NaN fails too)
                raise ValueError(f"pad: pad_value {value} does not fit X's dtype "
                                 f"{a.dtype.name}")
            value = int(value)                            # toward zero, as C's cast
        out = np.full(shape, value, a.dtype)
        out[middle(self.paddings, shape, "pad", "X")] = a
        return (out,)


cdef class PadGrad:
    """pad_grad: (Out@GRAD,) -> (X@GRAD,)."""
    cdef list paddings

    def __init__(self, dict attrs, info=None):
        self.paddings = [int(p) for p in attrs["paddings"]]

    def __call__(self, dout):
        g = dense(dout, "pad_grad", "Out@GRAD", GRAD_DTYPES)
        idx = middle(self.paddings, g.shape, "pad_grad", "Out@GRAD")
        for i, n in enumerate(g.shape):
            if n < self.paddings[2 * i] + self.paddings[2 * i + 1]:
                raise ValueError(f"pad_grad: Out@GRAD {list(g.shape)} is smaller than the "
                                 f"paddings {self.paddings} along dim {i}")
        return (g[idx].copy(),)


KERNELS = [("pad", Pad, PAD_DTYPES), ("pad_grad", PadGrad, GRAD_DTYPES)]
