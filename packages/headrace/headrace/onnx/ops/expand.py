"""expand_v2 and expand (headrace_tensor's expand family). expand_v2's -1 keeps X's dim: 1 in
ONNX Expand's broadcasting shape does the same. expand tiles X (ONNX Tile)."""
from ._common import arg_in, arg_out
from ._runtime_inputs import refuse_tensor_inputs

__all__ = ["EXPORTERS"]


def _expand_v2(ctx, op):
    refuse_tensor_inputs(ctx, op, ("Shape", "expand_shapes_tensor"))
    shape = [1 if d == -1 else d for d in op.attr("shape")]
    ctx.node("Expand", [arg_in(op, "X"), ctx.ints(shape)], arg_out(op, "Out"))


def _expand(ctx, op):
    refuse_tensor_inputs(ctx, op, ("ExpandTimes", "expand_times_tensor"))
    ctx.node("Tile", [arg_in(op, "X"), ctx.ints(op.attr("expand_times"))], arg_out(op, "Out"))


EXPORTERS = {"expand_v2": _expand_v2, "expand": _expand}
