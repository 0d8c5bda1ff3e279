"""clip: X limited to [min, max]; the bounds are attributes or one-element tensors (Min, Max),
which take precedence. The gradient passes Out@GRAD where min < X < max (Paddle's mask: a value
at a bound gets none) and, for bounds given as float tensors, gives Min@GRAD / Max@GRAD the sum
of Out@GRAD over the entries clipped to that bound.

clip_by_norm and squared_l2_norm are the ops Paddle's gradient clips emit (ClipGradByNorm, and
ClipGradByGlobalNorm's per-gradient squared norms): X scaled down to an L2 norm, and the sum of
X's squares ([1], as Paddle 3 declares it; its gradient 2 * X * Out@GRAD)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dim_eq, same_as

from ._common import FLOATS, NUMERIC, label

_FLT_MAX = 3.4028234663852886e38  # Paddle's default bounds: float32's extremes


def _infer_clip(ctx):
    x = ctx.input("X")
    for slot in ("Min", "Max"):
        if ctx.has_input(slot):
            b = ctx.input(slot)
            if any(d > 1 for d in b.shape):
                ctx.fail(f"input '{label(b, slot)}' must hold one element",
                         expected="shape [1] or []", found=f"shape {list(b.shape)}")
            if x.dtype is not None and b.dtype is not None and b.dtype != x.dtype:
                ctx.fail(f"input '{label(b, slot)}' must have X's dtype", expected=x.dtype,
                         found=b.dtype)
    lo, hi = ctx.attr("min"), ctx.attr("max")
    if not ctx.has_input("Min") and not ctx.has_input("Max") and lo > hi:
        ctx.fail("attribute 'min' must not exceed 'max'", expected="min <= max",
                 found=f"min = {lo}, max = {hi}")
    ctx.set_output_like("Out", x)


clip = OpDef(
    "clip",
    inputs=[In("X", "the tensor to clip", dtypes=NUMERIC),
            In("Min", "a one-element tensor: the lower bound (overrides 'min')", optional=True,
               dtypes=NUMERIC),
            In("Max", "a one-element tensor: the upper bound (overrides 'max')", optional=True,
               dtypes=NUMERIC)],
    outputs=[Out("Out", "X limited to [min, max], X's shape")],
    attrs=[Attr("min", "float", -_FLT_MAX, "the lower bound"),
           Attr("max", "float", _FLT_MAX, "the upper bound (>= min)")],
    infer=_infer_clip,
    doc="Out = minimum(maximum(X, min), max), with min <= max.",
)


def _infer_clip_grad(ctx):
    dout = ctx.input("Out@GRAD")
    for slot in ("X", "Min", "Max"):
        if ctx.has_input(slot):
            ctx.set_output_like(slot + "@GRAD", ctx.input(slot), dtype=dout.dtype)


clip_grad = grad_of(
    clip, uses=["X", "Min", "Max"], infer=_infer_clip_grad,
    doc="Gradient of clip: X@GRAD = Out@GRAD where min < X < max, else 0; Min@GRAD (Max@GRAD) "
        "= the sum of Out@GRAD where X < min (X > max).")

# -- clip_by_norm, squared_l2_norm --------------------------------------------------------------

clip_by_norm = OpDef(
    "clip_by_norm",
    inputs=[In("X", "the tensor to scale down (a gradient)", dtypes=FLOATS)],
    outputs=[Out("Out", "X, scaled to L2 norm max_norm when its norm exceeds it; X's shape")],
    # Paddle gives max_norm no default: its programs always set it.
    attrs=[Attr("max_norm", "float", doc="the largest L2 norm Out may have")],
    infer=same_as("X"),
    differentiable=False,
    doc="Out = X * max_norm / norm(X) when norm(X) > max_norm, else X, with norm(X) = "
        "sqrt(sum of X's squares) over every element (Paddle adds 1e-6 to a norm <= 1e-30). "
        "ClipGradByNorm's op, run on gradients after the backward pass: no gradient, as in "
        "Paddle.",
)


def _infer_squared_l2_norm(ctx):
    # [1]: Paddle 3 keeps this op's Fluid shape (it is not one of its 0-D reductions).
    ctx.set_output("Out", [1], ctx.input("X").dtype)


squared_l2_norm = OpDef(
    "squared_l2_norm",
    inputs=[In("X", "the tensor (a gradient)", dtypes=FLOATS)],
    outputs=[Out("Out", "[1]: the sum of the squares of X's elements")],
    infer=_infer_squared_l2_norm,
    doc="Out = [sum of X * X over every element], shape [1] (ClipGradByGlobalNorm sums these "
        "for the global norm).",
)


def _infer_squared_l2_norm_grad(ctx):
    x, d = ctx.input("X"), ctx.input("Out@GRAD")
    if not all(dim_eq(k, 1) for k in d.shape):
        ctx.fail(f"input '{label(d, 'Out@GRAD')}' must hold one element (the gradient of the "
                 f"squared norm)", expected="shape [1] or []", found=f"shape {list(d.shape)}")
    if x.dtype is not None and d.dtype is not None and d.dtype != x.dtype:
        ctx.fail(f"input '{label(d, 'Out@GRAD')}' must have X's dtype", expected=x.dtype,
                 found=d.dtype)
    ctx.set_output_like("X@GRAD", x)


squared_l2_norm_grad = grad_of(
    squared_l2_norm, uses=["X"], infer=_infer_squared_l2_norm_grad,
    doc="Gradient of squared_l2_norm: X@GRAD = 2 * Out@GRAD * X (Out@GRAD one element).")

OPS = [clip, clip_grad, clip_by_norm, squared_l2_norm, squared_l2_norm_grad]
