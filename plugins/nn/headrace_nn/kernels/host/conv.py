"""conv2d's host plan, one copy for kernels/cpu/conv.pyx and kernels/cuda/conv.py: the
attributes checked and the geometry of an (Input, Filter) pair (paddings resolved, output
extents, every extent checked to fit the C int range the CPU loops and the CUDA index
arithmetic use)."""
from typing import NamedTuple

from ._windows import INT_MAX, SAME, four_paddings, layout_and_algorithm, plane_paddings

__all__ = ["ConvAttrs", "Geometry", "GRADS"]

# conv2d_grad's outputs, in its kernels' order.
GRADS = ("Input@GRAD", "Filter@GRAD", "Bias@GRAD", "ResidualData@GRAD")


class Geometry(NamedTuple):
    """One (Input, Filter) pair's geometry; the first fields in the order of the CUDA
    im2col/col2im kernels' scalar arguments (see ``scalars``)."""
    C: int          # input channels (all groups)
    H: int
    W: int
    Cg: int         # channels per group
    groups: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int         # dilations (1 under SAME, which ignores them as Paddle does)
    dw: int
    pt: int         # top and left paddings (the bottom/right ones only bound Ho/Wo)
    pl: int
    Ho: int
    Wo: int
    M: int          # filters (all groups)
    Mg: int         # filters per group
    direct: bool    # 1x1, stride 1, no padding: the input is its own im2col matrix
    oshape: tuple   # Output's shape

    def scalars(self):
        """C .. Wo: the geometry arguments of the CUDA im2col/col2im kernels."""
        return self[:15]


def _pair(v, what, lo):
    if len(v) != 2 or v[0] < lo or v[1] < lo:
        raise ValueError(f"conv2d: attribute '{what}' must hold 2 values >= {lo}, got {v}")


class ConvAttrs:
    """conv2d's attributes, checked; ``geometry`` plans an input shape (kept for the last
    shape seen, as a kernel sees one shape step after step)."""

    def __init__(self, attrs):
        strides = list(attrs.get("strides", [1, 1]))
        dil = list(attrs.get("dilations", [1, 1]))
        _pair(strides, "strides", 1)
        _pair(dil, "dilations", 1)
        pads = four_paddings(attrs.get("paddings", [0, 0]))
        if pads is None:
            raise ValueError(f"conv2d: attribute 'paddings' must hold 2 or 4 values >= 0, "
                             f"got {attrs.get('paddings')}")
        self.sh, self.sw = strides
        self.dh, self.dw = dil
        self.pads = pads
        self.groups = attrs.get("groups", 1)
        if self.groups < 1:
            raise ValueError(f"conv2d: attribute 'groups' must be >= 1, got {self.groups}")
        self.nhwc, self.algo = layout_and_algorithm(attrs, "conv2d")
        self._key = self._geometry = None

    def geometry(self, name, xs, ws):
        """The Geometry of Input shape ``xs`` and Filter shape ``ws`` (tuples, refused unless
        both are 4-D); errors name the op ``name``."""
        key = (xs, ws)
        if key != self._key:
            self._geometry = self._plan(name, xs, ws)
            self._key = key
        return self._geometry

    def _plan(self, name, xs, ws):
        if len(xs) != 4 or len(ws) != 4:
            raise ValueError(f"{name}: Input{list(xs)} and Filter{list(ws)} must both be 4-D")
        if self.nhwc:
            H, W, C = xs[1], xs[2], xs[3]
        else:
            C, H, W = xs[1], xs[2], xs[3]
        M, Cg, kh, kw = ws
        groups = self.groups
        if C != Cg * groups:
            raise ValueError(f"{name}: Input{list(xs)} has {C} channels but "
                             f"Filter{list(ws)} with groups={groups} expects {Cg * groups}")
        if M % groups:
            raise ValueError(f"{name}: Filter{list(ws)} has {M} filters, not divisible by "
                             f"groups={groups}")
        sh, sw, dh, dw = self.sh, self.sw, self.dh, self.dw
        pt, pb, pl, pr = plane_paddings(self.pads, self.algo, H, W, sh, sw, kh, kw)
        if self.algo == SAME:
            dh = dw = 1      # SAME: out = ceil(in / stride); Paddle ignores dilation here
        eh = H + pt + pb - (dh * (kh - 1) + 1)
        ew = W + pl + pr - (dw * (kw - 1) + 1)
        if eh < 0 or ew < 0:
            raise ValueError(f"{name}: Input{list(xs)} is smaller than the dilated "
                             f"Filter{list(ws)} plus paddings [{pt}, {pb}, {pl}, {pr}] "
                             f"(dilations [{dh}, {dw}])")
        if max(H + pt + pb + dh * kh, W + pl + pr + dw * kw, Cg * kh * kw,
               (eh // sh + 1) * (ew // sw + 1), C * H * W) > INT_MAX:
            raise ValueError(f"{name}: Input{list(xs)} / Filter{list(ws)} with these "
                             f"paddings and dilations exceed the C int range of the kernel")
        direct = (kh == 1 and kw == 1 and sh == 1 and sw == 1 and
                  pt == 0 and pb == 0 and pl == 0 and pr == 0)
        Ho, Wo = eh // sh + 1, ew // sw + 1
        return Geometry(C, H, W, Cg, groups, kh, kw, sh, sw, dh, dw, pt, pl, Ho, Wo, M,
                        M // groups, direct,
                        (xs[0], Ho, Wo, M) if self.nhwc else (xs[0], M, Ho, Wo))
