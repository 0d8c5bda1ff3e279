"""softmax: exp(X) / sum(exp(X)) along one axis."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import normalize_axis

from ._common import FLOATS, expect_same_shape


def _infer_softmax(ctx):
    x = ctx.input("X")
    # Paddle 3 programs carry 0-D tensors; softmax of a scalar is 1 and axis may be 0 or -1.
    normalize_axis(ctx, ctx.attr("axis"), max(x.rank, 1))
    ctx.set_output_like("Out", x)


softmax = OpDef(
    "softmax",
    inputs=[In("X", "input tensor (logits)", dtypes=FLOATS)],
    outputs=[Out("Out", "normalized tensor, shape, dtype and LoD of X")],
    attrs=[
        Attr("axis", "int", -1, "the axis normalized over; negative counts from the end"),
        Attr("data_format", "string", "AnyLayout", "Paddle layout hint; does not change the result",
             choices=("AnyLayout", "NCHW", "NHWC")),
        Attr("is_test", "bool", False, "inference mode (no effect on the result)"),
    ],
    infer=_infer_softmax,
    doc="Out = exp(X - max) / sum(exp(X - max)) along `axis` (numerically stable). "
        "The gradient reads Out.",
)



def _infer_softmax_grad(ctx):
    out, dout = ctx.input("Out"), ctx.input("Out@GRAD")
    normalize_axis(ctx, ctx.attr("axis"), max(out.rank, 1))
    expect_same_shape(ctx, out, dout, "Out", "Out@GRAD")
    ctx.set_output_like("X@GRAD", out)


# softmax_grad(Out, Out@GRAD) -> X@GRAD = Out * (Out@GRAD - sum(Out * Out@GRAD, axis)).
softmax_grad = grad_of(
    softmax, uses=["Out"], grads=["X"], infer=_infer_softmax_grad,
    doc="Gradient of softmax: X@GRAD = Out * (Out@GRAD - sum(Out * Out@GRAD along axis)); "
        "reads Out, not X.")

OPS = [softmax, softmax_grad]
