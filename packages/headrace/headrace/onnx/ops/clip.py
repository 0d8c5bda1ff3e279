"""clip (headrace_math's clip family): bounds as inputs of X's dtype (ONNX Clip from 11)."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _clip(ctx, op):
    x = arg_in(op, "X")
    if arg_in(op, "Min") or arg_in(op, "Max"):
        ctx.fail("clip with Min/Max tensor inputs has no exporter (only the min/max attributes)")
    ctx.node("Clip", [x, ctx.scalar(op.attr("min"), x), ctx.scalar(op.attr("max"), x)],
             arg_out(op, "Out"))


EXPORTERS = {"clip": _clip}
