"""pad (headrace_tensor's pad family): Paddle's [before_0, after_0, ...] become ONNX's
[before_0, before_1, ..., after_0, after_1, ...]."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _pad(ctx, op):
    x, p = arg_in(op, "X"), list(op.attr("paddings"))
    pads = p[0::2] + p[1::2]
    ctx.node("Pad", [x, ctx.ints(pads), ctx.scalar(op.attr("pad_value"), x)],
             arg_out(op, "Out"), mode="constant")


EXPORTERS = {"pad": _pad}
