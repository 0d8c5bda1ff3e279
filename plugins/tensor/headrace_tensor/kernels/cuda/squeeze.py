"""squeeze2 and unsqueeze2 on CUDA: Out is X's device array with dims of size 1 removed or
inserted (a view; copied by one elementwise kernel where the CPU kernel copies: X or Out
persistable, or no op info), and the XShape placeholder. Their gradients are reshape2_grad's
kernel. Exception to "values stay on the device": unsqueeze2's AxesTensor / AxesTensorList
are shape metadata, read on the host as the CPU kernel reads them.
"""
from ..host.squeeze import declared_rank, squeezed, unsqueezed
from ._common import ALL_DTYPES, GRAD_DTYPES, dense, host_ints, ints_of_list, xshape_of
from .reshape import ReshapeGrad, reshaped


class Squeeze2:
    """squeeze2: (X,) -> (Out, XShape)."""

    def __init__(self, attrs, info=None):
        self.axes = tuple(int(a) for a in attrs["axes"])
        self.copy = info is None or not info.may_alias("X", "Out")
        self.rank = declared_rank(info)

    def __call__(self, x):
        a = dense(x, "squeeze2", "X")
        out = squeezed(self.axes, tuple(a.shape), self.rank)
        return (reshaped(a, out, self.copy), xshape_of(a))


class Unsqueeze2:
    """unsqueeze2: (X, AxesTensor, AxesTensorList) -> (Out, XShape)."""

    def __init__(self, attrs, info=None):
        self.axes = tuple(int(a) for a in attrs["axes"])
        self.copy = info is None or not info.may_alias("X", "Out")

    def __call__(self, x, axes_tensor=None, axes_list=None):
        a = dense(x, "unsqueeze2", "X")
        if axes_tensor is not None:
            axes = tuple(host_ints(axes_tensor, "unsqueeze2", "AxesTensor"))
        elif axes_list:
            axes = tuple(ints_of_list(axes_list, "unsqueeze2", "AxesTensorList"))
        else:
            axes = self.axes
        out = unsqueezed(axes, tuple(a.shape))
        return (reshaped(a, out, self.copy), xshape_of(a))


KERNELS = [
    ("squeeze2", Squeeze2, ALL_DTYPES),
    ("unsqueeze2", Unsqueeze2, ALL_DTYPES),
    ("squeeze2_grad", ReshapeGrad, GRAD_DTYPES),
    ("unsqueeze2_grad", ReshapeGrad, GRAD_DTYPES),
]
