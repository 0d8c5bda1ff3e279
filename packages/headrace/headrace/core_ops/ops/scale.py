"""scale: Out = scale * X + bias (or scale * (X + bias))."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp
from headrace.ops.shape import same_as

scale = OpDef(
    "scale",
    inputs=[In("X", "input tensor")],
    outputs=[Out("Out", "the scaled tensor, shape and dtype of X")],
    attrs=[
        Attr("scale", "float", 1.0, "multiplier"),
        Attr("bias", "float", 0.0, "added before or after scaling"),
        Attr("bias_after_scale", "bool", True, "scale*X+bias if true, scale*(X+bias) if false"),
    ],
    infer=same_as("X"),
    doc="Out = scale * X + bias if bias_after_scale else scale * (X + bias).",
)

OPS = [scale]


def _scale_grad(ctx):
    # d(scale*X + b)/dX = scale, whichever side the bias is on: the gradient is a scale op.
    if not ctx.wants("X"):
        return []
    return [GradOp("scale", {"X": ctx.output_grad("Out")}, {"Out": ctx.input_grad("X")},
                   {"scale": ctx.attrs["scale"], "bias": 0.0})]


scale.grad = _scale_grad
