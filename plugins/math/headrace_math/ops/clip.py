"""clip: X limited to [min, max]; the bounds are attributes or one-element tensors (Min, Max),
which take precedence. The gradient passes Out@GRAD where min < X < max (Paddle's mask: a value
at a bound gets none) and, for bounds given as float tensors, gives Min@GRAD / Max@GRAD the sum
of Out@GRAD over the entries clipped to that bound."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import NUMERIC, label

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

OPS = [clip, clip_grad]
