"""mul, matmul, matmul_v2 (headrace_math's matmul family).

mul flattens X to a matrix at ``x_num_col_dims`` (ONNX Flatten's ``axis`` is the same cut) and
Y at ``y_num_col_dims``, multiplies, and gives Out the shape X[:xn] + Y[yn:] (Reshape from
X's runtime shape when X has more than one row dim). matmul/matmul_v2 swap the last two dims of
an operand of rank >= 2 when asked (a 1-D operand is never transposed, as in Paddle); matmul's
``alpha`` scales the product.
"""
import numpy as np

from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _mul(ctx, op):
    x, y, out = arg_in(op, "X"), arg_in(op, "Y"), arg_out(op, "Out")
    xn, yn = op.attr("x_num_col_dims"), op.attr("y_num_col_dims")
    x_shape, y_shape = ctx.shape(x), ctx.shape(y)
    x2 = x if len(x_shape) == 2 and xn == 1 else ctx.node("Flatten", [x], axis=xn)
    y2 = y if len(y_shape) == 2 and yn == 1 else ctx.node("Flatten", [y], axis=yn)
    if xn == 1 and len(y_shape) - yn == 1:
        ctx.node("MatMul", [x2, y2], out)
        return
    product = ctx.node("MatMul", [x2, y2])
    if any(d < 0 for d in y_shape[yn:]):
        ctx.fail(f"Y's column dims {y_shape[yn:]} must be known to shape Out")
    rows = ctx.node("Slice", [ctx.node("Shape", [x]), ctx.ints([0]), ctx.ints([xn])])
    shape = ctx.node("Concat", [rows, ctx.ints(y_shape[yn:])], axis=0)
    ctx.node("Reshape", [product, shape], out)


def _transposed(ctx, name, flag):
    rank = ctx.rank(name)
    if not flag or rank < 2:
        return name
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return ctx.node("Transpose", [name], perm=perm)


def _matmul(tx_attr, ty_attr, alpha_attr=None):
    def export(ctx, op):
        x = _transposed(ctx, arg_in(op, "X"), op.attr(tx_attr))
        y = _transposed(ctx, arg_in(op, "Y"), op.attr(ty_attr))
        out = arg_out(op, "Out")
        alpha = float(op.attr(alpha_attr)) if alpha_attr else 1.0
        if alpha == 1.0:
            ctx.node("MatMul", [x, y], out)
        else:
            scale = ctx.scalar(np.float64(alpha), arg_in(op, "X"))
            ctx.node("Mul", [ctx.node("MatMul", [x, y]), scale], out)
    return export


EXPORTERS = {"mul": _mul, "matmul": _matmul("transpose_X", "transpose_Y", "alpha"),
             "matmul_v2": _matmul("trans_x", "trans_y")}
