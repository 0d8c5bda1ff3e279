"""transpose2 (headrace_tensor's transpose family): ONNX Transpose; XShape not exported."""
from ._common import arg_in, arg_out, norm_axes

__all__ = ["EXPORTERS"]


def _transpose2(ctx, op):
    x = arg_in(op, "X")
    ctx.node("Transpose", [x], arg_out(op, "Out"),
             perm=norm_axes(list(op.attr("axis")), ctx.rank(x)))


EXPORTERS = {"transpose2": _transpose2}
