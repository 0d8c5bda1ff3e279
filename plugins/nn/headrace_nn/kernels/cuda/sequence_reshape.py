"""sequence_reshape and its gradient on CUDA: the values are copied unchanged (one thread per
element) into a tensor of the new row width; only the LoD changes, computed on the host from
the old one with the CPU kernel's checks (kernels/cpu/sequence_reshape.pyx). No LoD goes to the
device: the copy does not read it.
"""

from headrace.kernels.cuda_launch import copy_into, device_empty
from headrace.runtime import Tensor

from ..host.sequence_reshape import ReshapedLoD, check_layout

DTYPES = ("int32", "int64", "float32", "float64")


def _checked(x, op):
    a = x.data
    if str(a.dtype) not in DTYPES:
        raise TypeError(f"{op}: X has dtype {a.dtype}, expected one of {', '.join(DTYPES)}")
    check_layout(a.shape, x.lod, op)
    return a


def _copied(a, shape):
    """A copy of ``a``'s values in a new array of ``shape`` (as many values)."""
    return copy_into(a, device_empty(shape, a.dtype))


class SequenceReshape:
    def __init__(self, attrs, info=None):
        self.lod = ReshapedLoD(attrs)
        self.new_dim = self.lod.new_dim

    def __call__(self, x):
        a = _checked(x, "sequence_reshape")
        lod = self.lod(x.lod[0], a.shape[1])
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
