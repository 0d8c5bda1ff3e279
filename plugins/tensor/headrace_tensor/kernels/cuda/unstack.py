"""unstack and its gradient on CUDA: the slices of X along axis (a view for axis 0 where the
CPU kernel gives views; otherwise one strided-copy launch per slice), and unstack_grad a stack
of the slices' gradients with zeros for the missing ones.
"""
from headrace.kernels.cuda_strided import zeros

from .stack import stacked, take

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64")


class Unstack:
    def __init__(self, attrs, info=None):
        self.axis, self.num = attrs["axis"], attrs["num"]
        self.copy = info is None or not info.may_alias("X", "Y")

    def __call__(self, x):
        nd = len(x.shape)
        axis = self.axis + nd if self.axis < 0 else self.axis
        if not 0 <= axis < nd or x.shape[axis] != self.num:
            raise ValueError(f"unstack: X of shape {list(x.shape)} has no {self.num} slices "
                             f"along axis {self.axis}")
        if axis == 0 and not self.copy:
            return ([x[k] for k in range(self.num)],)
        return ([take(x, k, axis) for k in range(self.num)],)


class UnstackGrad:
    def __init__(self, attrs, info=None):
        self.axis = attrs["axis"]

    def __call__(self, grads):
        present = [g for g in grads if g is not None]
        if not present:
            raise ValueError("unstack_grad: no slice has a gradient")
        like = present[0]
        parts = [zeros(like.shape, like.dtype) if g is None else g for g in grads]
        nd = len(like.shape)
        axis = self.axis + nd + 1 if self.axis < 0 else self.axis
        return (stacked(parts, axis),)


KERNELS = [("unstack", Unstack, ALL_DTYPES), ("unstack_grad", UnstackGrad, ALL_DTYPES)]
