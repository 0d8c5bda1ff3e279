"""shape (headrace_tensor's shape family): Paddle's Out is int32, ONNX Shape's int64."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _shape(ctx, op):
    out = arg_out(op, "Out")
    ctx.cast(ctx.node("Shape", [arg_in(op, "Input")]), ctx.dtype(out), out)


EXPORTERS = {"shape": _shape}
