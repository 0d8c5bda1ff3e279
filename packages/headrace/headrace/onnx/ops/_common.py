"""Helpers the op exporters share: slot arguments, Paddle's axis broadcasting, axis lists."""

__all__ = ["arg_in", "arg_out", "aligned", "norm_axes", "unary"]


def arg_in(op, slot):
    """The first variable bound to input ``slot``, or None when unbound."""
    names = op.input(slot)
    return names[0] if names else None


def arg_out(op, slot):
    """The first variable bound to output ``slot``, or None when unbound."""
    names = op.output(slot)
    return names[0] if names else None


def aligned(ctx, x, y, axis):
    """``y`` made to broadcast against ``x`` as Paddle's elementwise ``axis`` says: Y's dims
    line up with X's starting at ``axis`` (-1: at the end, NumPy's rule), so a lower-rank Y that
    does not end where X ends gets trailing size-1 dims (Unsqueeze), which ONNX's
    right-aligned broadcasting then matches."""
    rx, ry = ctx.rank(x), ctx.rank(y)
    if axis == -1 or ry >= rx or axis == rx - ry:
        return y
    if not 0 <= axis <= rx - ry:
        ctx.fail(f"axis={axis} does not place Y's {ry} dims inside X's {rx}",
                 expected=f"-1 or 0 <= axis <= {rx - ry}", found=f"axis = {axis}")
    return ctx.unsqueeze(y, list(range(ry, rx - axis)))


def norm_axes(axes, rank):
    """Axes with negative ones counted from the end."""
    return [a + rank if a < 0 else a for a in axes]


def unary(onnx_op, **attrs):
    """An exporter of ``Out = onnx_op(X)`` with fixed ONNX attributes."""
    def export(ctx, op):
        ctx.node(onnx_op, [arg_in(op, "X")], arg_out(op, "Out"), **attrs)
    export.__name__ = f"export_{onnx_op.lower()}"
    return export
