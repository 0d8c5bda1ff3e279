"""fused_conv2d_add_act (headrace_nn's fused_conv family): conv2d's Conv (+ Bias, + the
ResidualData Add), then Relu for activation 'relu'."""
from ._common import arg_out
from .conv import conv

__all__ = ["EXPORTERS"]


def _fused_conv2d_add_act(ctx, op):
    out = arg_out(op, "Output")
    if op.attr("activation") == "relu":
        ctx.node("Relu", [conv(ctx, op, None)], out)
    else:
        conv(ctx, op, out)


EXPORTERS = {"fused_conv2d_add_act": _fused_conv2d_add_act}
