"""softmax (headrace_nn's softmax family): ONNX Softmax normalizes along one axis from opset
13 on, as Paddle's does."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _softmax(ctx, op):
    ctx.node("Softmax", [arg_in(op, "X")], arg_out(op, "Out"), axis=op.attr("axis"))


EXPORTERS = {"softmax": _softmax}
