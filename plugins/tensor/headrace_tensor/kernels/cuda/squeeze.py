"""squeeze2 and unsqueeze2 on CUDA: Out is X's device array with dims of size 1 removed or
inserted (a view; copied by one elementwise kernel where the CPU kernel copies: X or Out
persistable, or no op info), and the XShape placeholder. Their gradients are reshape2_grad's
kernel. Exception to "values stay on the device": unsqueeze2's AxesTensor / AxesTensorList
are shape metadata, read on the host as the CPU kernel reads them.
"""
from ._common import ALL_DTYPES, GRAD_DTYPES, dense, host_ints, ints_of_list, xshape_of
from .reshape import ReshapeGrad, reshaped


def declared_rank(info):
    """Out's rank as the program declared it (None without an info)."""
    if info is None or not info.out_shapes.get("Out") or info.out_shapes["Out"][0] is None:
        return None
    return len(info.out_shapes["Out"][0])


class Squeeze2:
    """squeeze2: (X,) -> (Out, XShape)."""

    def __init__(self, attrs, info=None):
        self.axes = [int(a) for a in attrs["axes"]]
        self.copy = info is None or not info.may_alias("X", "Out")
        self.rank = declared_rank(info)

    def __call__(self, x):
        a = dense(x, "squeeze2", "X")
        dims = tuple(a.shape)
        rank = len(dims)
        if not self.axes:
            gone = {k for k, d in enumerate(dims) if d == 1}
        else:
            gone = set()
            for ax in self.axes:
                if not (-rank <= ax < rank if rank else ax in (-1, 0)):
                    raise IndexError(f"squeeze2: axis {ax} of 'axes' is out of range for X of "
                                     f"shape {list(dims)}")
                if rank and dims[ax % rank] == 1:
                    gone.add(ax % rank)
        out = tuple(d for k, d in enumerate(dims) if k not in gone)
        if self.rank is not None and len(out) != self.rank:
            raise ValueError(f"squeeze2: axes {self.axes} of X of shape {list(dims)} leave "
                             f"{len(out)} dims, but the program declared Out with {self.rank} "
                             f"(a listed dim unknown when it was built is not 1 now)")
        return (reshaped(a, out, self.copy), xshape_of(a))


class Unsqueeze2:
    """unsqueeze2: (X, AxesTensor, AxesTensorList) -> (Out, XShape)."""

    def __init__(self, attrs, info=None):
        self.axes = [int(a) for a in attrs["axes"]]
        self.copy = info is None or not info.may_alias("X", "Out")

    def __call__(self, x, axes_tensor=None, axes_list=None):
        a = dense(x, "unsqueeze2", "X")
        if axes_tensor is not None:
            axes = host_ints(axes_tensor, "unsqueeze2", "AxesTensor")
        elif axes_list:
            axes = ints_of_list(axes_list, "unsqueeze2", "AxesTensorList")
        else:
            axes = self.axes
        out = list(a.shape)
        for ax in axes:
            rank = len(out)
            if not -rank - 1 <= ax <= rank:
                raise IndexError(f"unsqueeze2: axis {ax} (axes {axes}, applied in turn) is out "
                                 f"of range for a rank-{rank} shape {out}")
            out.insert(ax + rank + 1 if ax < 0 else ax, 1)
        return (reshaped(a, out, self.copy), xshape_of(a))


KERNELS = [
    ("squeeze2", Squeeze2, ALL_DTYPES),
    ("unsqueeze2", Unsqueeze2, ALL_DTYPES),
    ("squeeze2_grad", ReshapeGrad, GRAD_DTYPES),
    ("unsqueeze2_grad", ReshapeGrad, GRAD_DTYPES),
]
