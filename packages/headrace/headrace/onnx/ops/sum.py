"""sum (the core's sum op): ONNX Sum of the X tensors."""
from ._common import arg_out

__all__ = ["EXPORTERS"]


def _sum(ctx, op):
    ctx.node("Sum", op.input("X"), arg_out(op, "Out"))


EXPORTERS = {"sum": _sum}
