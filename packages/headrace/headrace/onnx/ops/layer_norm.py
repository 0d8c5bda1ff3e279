"""layer_norm (headrace_nn's layer_norm family): ONNX LayerNormalization (opset >= 17) over
the dims from begin_norm_axis on, Paddle's flat Scale/Bias reshaped to those dims; before 17,
the normalization spelled out (ReduceMean, Sub, Pow, Sqrt, Div)."""
import numpy as np

from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _row_shaped(ctx, name, row_shape):
    """Paddle's Scale/Bias are flat [prod(row dims)]: reshaped to the row dims."""
    if name is None or len(row_shape) == 1:
        return name
    if any(d < 0 for d in row_shape):
        ctx.fail("layer_norm over several dims needs them known to shape Scale/Bias",
                 found=f"row dims {row_shape}")
    return ctx.node("Reshape", [name, ctx.ints(row_shape)])


def _layer_norm(ctx, op):
    x, y = arg_in(op, "X"), arg_out(op, "Y")
    shape = ctx.shape(x)
    axis = op.attr("begin_norm_axis")
    eps = float(op.attr("epsilon"))
    scale = _row_shaped(ctx, arg_in(op, "Scale"), shape[axis:])
    bias = _row_shaped(ctx, arg_in(op, "Bias"), shape[axis:])
    if ctx.opset >= 17:
        if scale is None:
            # LayerNormalization requires a scale: ones of the row shape.
            ones = np.ones([d for d in shape[axis:]], dtype=ctx.dtype(x))
            scale = ctx.const(ones, hint="layer_norm.ones")
        ctx.node("LayerNormalization", [x, scale] + ([bias] if bias else []), y, axis=axis,
                 epsilon=eps)
        return
    axes = list(range(axis, len(shape)))
    centered = ctx.node("Sub", [x, ctx.reduce("ReduceMean", x, axes, True)])
    var = ctx.reduce("ReduceMean", ctx.node("Mul", [centered, centered]), axes, True)
    std = ctx.node("Sqrt", [ctx.node("Add", [var, ctx.scalar(eps, x)])])
    normed = ctx.node("Div", [centered, std])
    if scale is not None:
        normed = ctx.node("Mul", [normed, scale], None if bias else y)
    if bias is not None:
        ctx.node("Add", [normed, bias], y)
    elif scale is None:
        ctx.node("Identity", [normed], y)


EXPORTERS = {"layer_norm": _layer_norm}
