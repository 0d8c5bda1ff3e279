"""fc as ONNX: Flatten Input at in_num_col_dims (ONNX Flatten's axis is the same cut),
MatMul with W, Add the bias, Relu for activation_type 'relu', and Reshape back to
Input.dims[:in_num_col_dims] + [N] when Input has more than one row dim."""
from headrace.onnx.ops._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _fc(ctx, op):
    x, w, out = arg_in(op, "Input"), arg_in(op, "W"), arg_out(op, "Out")
    n = op.attr("in_num_col_dims")
    x_shape, w_shape = ctx.shape(x), ctx.shape(w)
    steps = [("MatMul", [x if len(x_shape) == 2 and n == 1 else
                         ctx.node("Flatten", [x], axis=n), w])]
    if op.input("Bias"):    # [N] or [1, N]: Add broadcasts either over the rows
        steps.append(("Add", [arg_in(op, "Bias")]))
    if op.attr("activation_type") == "relu":
        steps.append(("Relu", []))
    reshape = n != 1
    value = None
    for k, (onnx_op, extra) in enumerate(steps):
        last = k == len(steps) - 1 and not reshape
        inputs = extra if value is None else [value] + extra
        value = ctx.node(onnx_op, inputs, out if last else None)
    if reshape:
        if w_shape[1] < 0:
            ctx.fail(f"W's column count {w_shape[1]} must be known to shape Out")
        rows = ctx.node("Slice", [ctx.node("Shape", [x]), ctx.ints([0]), ctx.ints([n])])
        shape = ctx.node("Concat", [rows, ctx.ints([w_shape[1]])], axis=0)
        ctx.node("Reshape", [value, shape], out)


EXPORTERS = {"fc": _fc}
