"""Comparisons (headrace_math's compare family): Paddle's axis broadcasting, a bool Out."""
from ._common import aligned, arg_in, arg_out
from .elementwise import binary

__all__ = ["EXPORTERS"]


def _not(onnx_op):
    """``Out = not onnx_op(X, Y)`` (ONNX has no NotEqual; LessOrEqual etc. exist from 12)."""
    def export(ctx, op):
        x, y = arg_in(op, "X"), arg_in(op, "Y")
        ctx.node("Not", [ctx.node(onnx_op, [x, aligned(ctx, x, y, op.attr("axis"))])],
                 arg_out(op, "Out"))
    return export


EXPORTERS = {
    "equal": binary("Equal"), "not_equal": _not("Equal"), "less_than": binary("Less"),
    "less_equal": binary("LessOrEqual"), "greater_than": binary("Greater"),
    "greater_equal": binary("GreaterOrEqual"),
}
