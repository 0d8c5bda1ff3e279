"""pool2d's host plan, one copy for kernels/cpu/pool.pyx and kernels/cuda/pool.py: the
attributes checked and, per input shape, Out's shape and the window scalars (plain, global or
adaptive windows; paddings resolved; the padded plane checked to fit a C int)."""
from typing import NamedTuple

from ...ops._common import pool_out_size
from ._windows import INT_MAX, four_paddings, layout_and_algorithm, plane_paddings

__all__ = ["PoolAttrs", "PoolPlan"]


class PoolPlan(NamedTuple):
    """One input shape's windows; the fields from C on in the order of the CUDA kernels'
    scalar arguments (see ``scalars``). Window ``i`` of an axis spans
    [i*stride - pad, +k) clipped to the plane, or adaptive [floor(i*in/out), ceil((i+1)*in/out))."""
    oshape: tuple
    N: int
    C: int
    H: int
    W: int
    Ho: int
    Wo: int
    kh: int         # the window (global: the plane); kh*kw is avg's divisor unless exclusive
    kw: int
    sh: int
    sw: int
    pt: int
    pl: int
    adaptive: bool
    is_max: bool
    exclusive: bool
    nhwc: bool

    def scalars(self):
        """C .. nhwc: the plan arguments of the CUDA pooling kernels."""
        return self[2:]


class PoolAttrs:
    """pool2d's attributes, checked; ``plan`` plans an input shape (kept for the last shape
    seen, as a kernel sees one shape step after step)."""

    def __init__(self, attrs):
        ptype = attrs.get("pooling_type", "max")
        if ptype not in ("max", "avg"):
            raise ValueError(f"pool2d: pooling_type must be 'max' or 'avg', got {ptype!r}")
        self.is_max = ptype == "max"
        ksize, strides = list(attrs["ksize"]), list(attrs.get("strides", [1, 1]))
        if len(ksize) != 2 or min(ksize) < 1 or len(strides) != 2 or min(strides) < 1:
            raise ValueError(f"pool2d: ksize {ksize} and strides {strides} must hold 2 "
                             f"values >= 1")
        self.kh, self.kw = ksize
        self.sh, self.sw = strides
        pads = four_paddings(attrs.get("paddings", [0, 0]))
        if pads is None:
            raise ValueError(f"pool2d: paddings must hold 2 or 4 values >= 0, got "
                             f"{attrs.get('paddings')}")
        self.paddings = pads
        self.global_pooling = attrs.get("global_pooling", False)
        self.exclusive = attrs.get("exclusive", True)
        self.adaptive = attrs.get("adaptive", False)
        self.ceil_mode = attrs.get("ceil_mode", False)
        self.nhwc, self.algo = layout_and_algorithm(attrs, "pool2d")
        self._xs = self._plan = None

    def plan(self, xs):
        """The PoolPlan of X's 4-D shape ``xs``."""
        if xs != self._xs:
            self._plan = self._make(xs)
            self._xs = xs
        return self._plan

    def _make(self, xs):
        if self.nhwc:
            N, H, W, C = xs
        else:
            N, C, H, W = xs
        kh, kw, sh, sw = self.kh, self.kw, self.sh, self.sw
        exclusive, adaptive = self.exclusive, self.adaptive
        if adaptive:
            # ksize names the output grid; global_pooling first makes it the input's.
            ho, wo = (H, W) if self.global_pooling else (kh, kw)
            pt = pl = 0
            exclusive = True
        elif self.global_pooling:
            ho, wo, kh, kw, pt, pl, sh, sw = 1, 1, H, W, 0, 0, 1, 1
        else:
            pt, pb, pl, pr = plane_paddings(self.paddings, self.algo, H, W, sh, sw, kh, kw)
            if max(H + pt + pb + sh + kh, W + pl + pr + sw + kw) > INT_MAX:
                raise ValueError(f"pool2d: the padded plane [{H}+{pt}+{pb}, {W}+{pl}+{pr}] "
                                 f"exceeds the C int range of the kernel")
            ho = pool_out_size(H, kh, pt, pb, sh, self.ceil_mode)
            wo = pool_out_size(W, kw, pl, pr, sw, self.ceil_mode)
            if ho <= 0 or wo <= 0:
                raise ValueError(f"pool2d: the input plane [{H}, {W}] is smaller than the "
                                 f"window [{kh}, {kw}] plus paddings [{pt}, {pb}, {pl}, {pr}]")
        oshape = (N, ho, wo, C) if self.nhwc else (N, C, ho, wo)
        return PoolPlan(oshape, N, C, H, W, ho, wo, kh, kw, sh, sw, pt, pl, adaptive,
                        self.is_max, exclusive, self.nhwc)
