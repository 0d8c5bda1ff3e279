"""elementwise_* (headrace_math's elementwise family): the ONNX binary op, Y first aligned to
X by Paddle's ``axis`` (see ``_common.aligned``)."""
from ._common import aligned, arg_in, arg_out

__all__ = ["EXPORTERS", "binary"]


def binary(onnx_op):
    """An exporter of ``Out = onnx_op(X, Y)`` with Paddle's axis broadcasting."""
    def export(ctx, op):
        x, y = arg_in(op, "X"), arg_in(op, "Y")
        axis = op.attr("axis") if op.has_attr("axis") else -1
        ctx.node(onnx_op, [x, aligned(ctx, x, y, axis)], arg_out(op, "Out"))
    export.__name__ = f"export_{onnx_op.lower()}"
    return export


EXPORTERS = {
    "elementwise_add": binary("Add"), "elementwise_sub": binary("Sub"),
    "elementwise_mul": binary("Mul"), "elementwise_div": binary("Div"),
    "elementwise_max": binary("Max"), "elementwise_min": binary("Min"),
    "elementwise_pow": binary("Pow"),
}
