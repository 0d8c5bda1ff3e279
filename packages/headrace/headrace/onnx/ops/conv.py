"""conv2d (headrace_nn's conv family): ONNX Conv; the optional Bias (Paddle's fused form) as
Conv's bias, ResidualData added after."""
from ._common import arg_in, arg_out
from ._layout import nchw_in, nchw_out, pads

__all__ = ["EXPORTERS"]


def conv(ctx, op, out):
    """Output of conv2d (or fused_conv2d_add_act before its activation) into ``out`` (None:
    a fresh name); returns the name."""
    x, w = arg_in(op, "Input"), arg_in(op, "Filter")
    bias, residual = arg_in(op, "Bias"), arg_in(op, "ResidualData")
    kernel = ctx.shape(w)[2:]
    attrs = dict(kernel_shape=kernel, strides=list(op.attr("strides")),
                 dilations=list(op.attr("dilations")), group=op.attr("groups"),
                 **pads(ctx, op, kernel))
    inputs = [nchw_in(ctx, op, x), w] + ([bias] if bias else [])
    if residual:
        y = nchw_out(ctx, op, "Conv", inputs, None, **attrs)
        return ctx.node("Add", [y, residual], out)
    return nchw_out(ctx, op, "Conv", inputs, out, **attrs)


def _conv2d(ctx, op):
    conv(ctx, op, arg_out(op, "Output"))


EXPORTERS = {"conv2d": _conv2d}
