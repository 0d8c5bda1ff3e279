"""reshape2 and flatten_contiguous_range (headrace_tensor's reshape family). ONNX Reshape's
0 (copy the input dim at that index) and -1 (the rest) are Paddle's; XShape is not exported."""
from ._common import arg_in, arg_out, norm_axes
from ._runtime_inputs import refuse_tensor_inputs

__all__ = ["EXPORTERS"]


def _reshape2(ctx, op):
    refuse_tensor_inputs(ctx, op, ("Shape", "ShapeTensor"))
    ctx.node("Reshape", [arg_in(op, "X"), ctx.ints(op.attr("shape"))], arg_out(op, "Out"))


def _flatten(ctx, op):
    x, out = arg_in(op, "X"), arg_out(op, "Out")
    shape = ctx.shape(x)
    rank = len(shape)
    if rank == 0:
        ctx.node("Reshape", [x, ctx.ints([1])], out)
        return
    start, stop = norm_axes([op.attr("start_axis"), op.attr("stop_axis")], rank)
    tail = shape[stop + 1:]
    if all(d >= 0 for d in tail):
        # 0 copies the leading dims (same index in X and Out), -1 is the merged range.
        ctx.node("Reshape", [x, ctx.ints([0] * start + [-1] + tail)], out)
        return
    dims = ctx.node("Shape", [x])
    parts = [ctx.ints([0] * start + [-1]),
             ctx.node("Slice", [dims, ctx.ints([stop + 1]), ctx.ints([rank])])]
    ctx.node("Reshape", [x, ctx.node("Concat", parts, axis=0)], out)


EXPORTERS = {"reshape2": _reshape2, "flatten_contiguous_range": _flatten}
