"""scale (the core's scale op): Out = scale * X + bias, or scale * (X + bias)."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _scale(ctx, op):
    x, out = arg_in(op, "X"), arg_out(op, "Out")
    s, b = float(op.attr("scale")), float(op.attr("bias"))
    tensor = arg_in(op, "ScaleTensor")
    factor = tensor if tensor else ctx.scalar(s, x)
    if b == 0.0:
        ctx.node("Mul", [x, factor], out)
    elif op.attr("bias_after_scale"):
        ctx.node("Add", [ctx.node("Mul", [x, factor]), ctx.scalar(b, x)], out)
    else:
        ctx.node("Mul", [ctx.node("Add", [x, ctx.scalar(b, x)]), factor], out)


EXPORTERS = {"scale": _scale}
