"""arg_max and arg_min (headrace_tensor's arg_min_max family): ONNX ArgMax/ArgMin give int64;
a dtype of int32 adds a Cast; flatten searches the flattened X."""
from ... import dtypes
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _arg(onnx_op):
    def export(ctx, op):
        x, out = arg_in(op, "X"), arg_out(op, "Out")
        axis, keep = op.attr("axis"), int(op.attr("keepdims"))
        if op.attr("flatten"):
            x, axis = ctx.node("Reshape", [x, ctx.ints([-1])]), 0
        code = op.attr("dtype")
        want = "int64" if code == -1 else dtypes.from_proto(code)
        if want == "int64":
            ctx.node(onnx_op, [x], out, axis=axis, keepdims=keep)
        else:
            ctx.cast(ctx.node(onnx_op, [x], axis=axis, keepdims=keep), want, out)
    return export


EXPORTERS = {"arg_max": _arg("ArgMax"), "arg_min": _arg("ArgMin")}
