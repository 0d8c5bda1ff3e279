"""softmax: exp(X) / sum(exp(X)) along one axis."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import normalize_axis

from ._common import FLOATS


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

OPS = [softmax]
