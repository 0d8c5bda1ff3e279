"""slice and strided_slice (headrace_tensor's slice family): ONNX Slice (it clamps starts and
ends to the dim as Paddle does), then Squeeze of decrease_axis."""
from ._common import arg_in, arg_out
from ._runtime_inputs import refuse_tensor_inputs

__all__ = ["EXPORTERS"]

_INT64_MAX = 2 ** 63 - 1


def _slice(with_strides):
    def export(ctx, op):
        refuse_tensor_inputs(ctx, op, [f"{p}{kind}" for p in ("Starts", "Ends", "Strides")
                                       for kind in ("Tensor", "TensorList")])
        x, out = arg_in(op, "Input"), arg_out(op, "Out")
        axes = list(op.attr("axes"))
        ends = [min(e, _INT64_MAX) for e in op.attr("ends")]
        inputs = [x, ctx.ints(op.attr("starts")), ctx.ints(ends), ctx.ints(axes)]
        if with_strides:
            inputs.append(ctx.ints(op.attr("strides")))
        decrease = list(op.attr("decrease_axis"))
        if not decrease:
            ctx.node("Slice", inputs, out)
            return
        sliced = ctx.node("Slice", inputs)
        rank = ctx.rank(x)
        ctx.squeeze(sliced, sorted(a + rank if a < 0 else a for a in decrease), out)
    return export


EXPORTERS = {"slice": _slice(False), "strided_slice": _slice(True)}
