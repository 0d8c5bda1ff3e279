"""batch_norm in test mode (headrace_nn's batch_norm family): ONNX BatchNormalization with the
running statistics; MeanOut/VarianceOut (the same variables, unchanged at inference) and the
saved statistics are not outputs of the graph."""
from ._common import arg_in, arg_out
from ._layout import nchw_in, nchw_out

__all__ = ["EXPORTERS"]


def _batch_norm(ctx, op):
    if not op.attr("is_test") and not op.attr("use_global_stats"):
        ctx.fail("batch_norm in training mode (batch statistics) cannot be exported",
                 expected="is_test = True (an inference program: clone(for_test=True))",
                 found="is_test = False")
    if op.attr("trainable_statistics"):
        ctx.fail("batch_norm with trainable_statistics uses batch statistics at inference")
    x = arg_in(op, "X")
    inputs = [arg_in(op, s) for s in ("Scale", "Bias", "Mean", "Variance")]
    eps = float(op.attr("epsilon"))
    if ctx.rank(x) == 4:
        nchw_out(ctx, op, "BatchNormalization", [nchw_in(ctx, op, x, "data_layout")] + inputs,
                 arg_out(op, "Y"), attr="data_layout", epsilon=eps)
    elif op.attr("data_layout") == "NHWC" and ctx.rank(x) != 2:
        ctx.fail("batch_norm NHWC exports for 2-D and 4-D X only", found=ctx.shape(x))
    else:
        ctx.node("BatchNormalization", [x] + inputs, arg_out(op, "Y"), epsilon=eps)


EXPORTERS = {"batch_norm": _batch_norm}
