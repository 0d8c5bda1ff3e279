"""cumsum (headrace_math's cumsum family): ONNX CumSum's exclusive/reverse are Paddle's."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _cumsum(ctx, op):
    x, axis = arg_in(op, "X"), op.attr("axis")
    if op.attr("flatten"):
        x, axis = ctx.node("Reshape", [x, ctx.ints([-1])]), 0
    ctx.node("CumSum", [x, ctx.const(axis, "int64")], arg_out(op, "Out"),
             exclusive=int(op.attr("exclusive")), reverse=int(op.attr("reverse")))


EXPORTERS = {"cumsum": _cumsum}
