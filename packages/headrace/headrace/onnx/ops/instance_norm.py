"""instance_norm (headrace_nn's instance_norm family): ONNX InstanceNormalization (it needs a
scale and a bias: ones and zeros of [C] where the op has none)."""
import numpy as np

from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _instance_norm(ctx, op):
    x = arg_in(op, "X")
    channels = ctx.shape(x)[1]
    scale, bias = arg_in(op, "Scale"), arg_in(op, "Bias")
    if (scale is None or bias is None) and channels < 0:
        ctx.fail("instance_norm without Scale or Bias needs X's channel count known")
    dtype = ctx.dtype(x)
    scale = scale or ctx.const(np.ones(channels, dtype), hint="instance_norm.ones")
    bias = bias or ctx.const(np.zeros(channels, dtype), hint="instance_norm.zeros")
    ctx.node("InstanceNormalization", [x, scale, bias], arg_out(op, "Y"),
             epsilon=float(op.attr("epsilon")))


EXPORTERS = {"instance_norm": _instance_norm}
