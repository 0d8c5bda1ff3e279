"""where (headrace_tensor's where family): ONNX Where."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _where(ctx, op):
    ctx.node("Where", [arg_in(op, s) for s in ("Condition", "X", "Y")], arg_out(op, "Out"))


EXPORTERS = {"where": _where}
