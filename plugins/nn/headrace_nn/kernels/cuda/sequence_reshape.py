"""sequence_reshape and its gradient on CUDA: the values are copied unchanged (one thread per
element) into a tensor of the new row width; only the LoD changes, computed on the host from
the old one with the CPU kernel's checks (kernels/cpu/sequence_reshape.pyx). No LoD goes to the
device: the copy does not read it.
"""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import device_empty, flat, launch
from headrace.runtime import Tensor

DTYPES = ("int32", "int64", "float32", "float64")


@cuda.jit
def _copy(src, dst, n):
    k = cuda.grid(1)
    if k < n:
        dst[k] = src[k]


def _checked(x, op):
    a = x.data
    if str(a.dtype) not in DTYPES:
        raise TypeError(f"{op}: X has dtype {a.dtype}, expected one of {', '.join(DTYPES)}")
    if a.ndim != 2:
        raise ValueError(f"{op}: X must be a 2-D sequence batch [rows, width], found shape "
                         f"{list(a.shape)}")
    if len(x.lod) != 1:
        raise ValueError(f"{op}: X must have one LoD level (Paddle's sequence_reshape takes "
                         f"only one), found {len(x.lod)}")
    off = x.lod[0]
    if len(off) < 1 or off[0] != 0 or off[-1] != a.shape[0]:
        raise ValueError(f"{op}: X's LoD {list(off)} does not describe its {a.shape[0]} rows")
    return a


def _new_lod(off, width, new_dim):
    o = np.asarray(off, np.int64)
    lengths = np.diff(o)
    for i in np.nonzero((lengths < 0) | ((lengths * width) % new_dim != 0))[0][:1]:
        if lengths[i] < 0:
            raise ValueError(f"sequence_reshape: X's LoD offsets decrease at sequence {i}")
        raise ValueError(f"sequence_reshape: sequence {i} of X has {lengths[i]} rows of "
                         f"width {width} = {lengths[i] * width} values, which do not divide "
                         f"by new_dim {new_dim}")
    return [0] + np.cumsum(lengths * width // new_dim).tolist()


def _copied(a, shape):
    out = device_empty(shape, a.dtype)
    n = int(np.prod(shape, dtype=np.int64))
    launch(_copy, n, flat(a), flat(out), n)
    return out


class SequenceReshape:
    def __init__(self, attrs, info=None):
        self.new_dim = attrs["new_dim"]
        if self.new_dim < 1:
            raise ValueError(f"sequence_reshape: new_dim must be >= 1, got {self.new_dim}")

    def __call__(self, x):
        a = _checked(x, "sequence_reshape")
        width = a.shape[1]
        lod = [list(x.lod[0])] if width == self.new_dim else \
            [_new_lod(x.lod[0], width, self.new_dim)]
        # A copy: Out is a variable of its own, which later ops may write in place.
        return (Tensor(_copied(a, (a.size // self.new_dim, self.new_dim)), lod),)


class SequenceReshapeGrad:
    def __init__(self, attrs, info=None):
        pass

    def __call__(self, x, dout):
        op = "sequence_reshape_grad"
        a = _checked(x, op)
        g = getattr(dout, "data", dout)
        if g.dtype != a.dtype:
            raise TypeError(f"{op}: Out@GRAD has dtype {g.dtype}, X {a.dtype}")
        if g.ndim != 2 or g.size != a.size:
            raise ValueError(f"{op}: Out@GRAD has shape {list(g.shape)}; a 2-D tensor of "
                             f"X's {a.size} values was expected")
        return (Tensor(_copied(g, a.shape), x.lod),)


KERNELS = [("sequence_reshape", SequenceReshape, DTYPES, "lod"),
           ("sequence_reshape_grad", SequenceReshapeGrad, DTYPES, "lod")]
