"""pool2d (headrace_nn's pool family): Max/AveragePool, their Global forms, and adaptive
pooling where the windows are uniform (each side divisible by the output grid)."""
from ._common import arg_in, arg_out
from ._layout import nchw_in, nchw_out, pads

__all__ = ["EXPORTERS"]


def _pool2d(ctx, op):
    x, out = arg_in(op, "X"), arg_out(op, "Out")
    kind = op.attr("pooling_type")
    onnx_op = "MaxPool" if kind == "max" else "AveragePool"
    ksize, strides = list(op.attr("ksize")), list(op.attr("strides"))
    data_format = "data_format"
    h, w = ctx.shape(x)[1:3] if op.attr(data_format) == "NHWC" else ctx.shape(x)[2:4]
    if op.attr("global_pooling") or (op.attr("adaptive") and ksize == [1, 1]):
        nchw_out(ctx, op, "Global" + onnx_op, [nchw_in(ctx, op, x)], out)
        return
    attrs = {}
    if op.attr("adaptive"):
        # Uniform windows only: output i covers [i*s, (i+1)*s) with s = side / grid.
        if h < 0 or w < 0 or h % ksize[0] or w % ksize[1]:
            ctx.fail("adaptive pool2d exports only when X's known height and width are "
                     "multiples of the output grid", expected=f"H, W multiples of {ksize}",
                     found=f"H, W = {h}, {w}")
        ksize = strides = [h // ksize[0], w // ksize[1]]
        attrs["pads"] = [0, 0, 0, 0]
    else:
        attrs.update(pads(ctx, op, ksize))
        attrs["ceil_mode"] = int(op.attr("ceil_mode"))
    if kind == "avg":
        attrs["count_include_pad"] = int(not op.attr("exclusive"))
    nchw_out(ctx, op, onnx_op, [nchw_in(ctx, op, x)], out, kernel_shape=ksize,
             strides=strides, **attrs)


EXPORTERS = {"pool2d": _pool2d}
