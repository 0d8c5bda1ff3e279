"""The 2-D window attributes conv2d and pool2d share, in ONNX's terms."""

__all__ = ["pads", "nchw_in", "nchw_out", "channels_last"]


def channels_last(op, attr="data_format"):
    return op.attr(attr) == "NHWC"


def pads(ctx, op, kernel, name="paddings"):
    """ONNX ``pads`` [top, left, bottom, right] from Paddle's (h, w) or (top, bottom, left,
    right) paddings; ``None`` with ``auto_pad`` for padding_algorithm SAME (Paddle pads the
    extra row/column at the end: SAME_UPPER)."""
    algorithm = op.attr("padding_algorithm") if op.has_attr("padding_algorithm") else "EXPLICIT"
    if algorithm == "SAME":
        return {"auto_pad": "SAME_UPPER"}
    if algorithm == "VALID":
        return {"pads": [0, 0, 0, 0]}
    p = list(op.attr(name))
    if len(p) == 2:
        return {"pads": [p[0], p[1], p[0], p[1]]}
    if len(p) == 4:
        return {"pads": [p[0], p[2], p[1], p[3]]}
    ctx.fail(f"attribute '{name}' must have 2 or 4 values", found=p)


def nchw_in(ctx, op, x, attr="data_format"):
    """``x`` in NCHW (a Transpose from NHWC when the op's layout says so)."""
    return ctx.node("Transpose", [x], perm=[0, 3, 1, 2]) if channels_last(op, attr) else x


def nchw_out(ctx, op, onnx_op, inputs, out, attr="data_format", **attrs):
    """``onnx_op`` computed in NCHW, its result written to ``out`` in the op's layout."""
    if not channels_last(op, attr):
        return ctx.node(onnx_op, inputs, out, **attrs)
    return ctx.node("Transpose", [ctx.node(onnx_op, inputs, **attrs)], out, perm=[0, 2, 3, 1])
