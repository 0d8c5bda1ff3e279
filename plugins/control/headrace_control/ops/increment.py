"""increment: Out = X + step for a one-element counter (loop indices). No gradient."""
from headrace import dtypes as dt
from headrace.ops import Attr, In, OpDef, Out

from ._common import expect_one_element

NUMERIC_DTYPES = tuple(dt.INT_DTYPES) + tuple(dt.FLOAT_DTYPES)


def _infer_increment(ctx):
    x = ctx.input("X")
    expect_one_element(ctx, x, "X")
    ctx.set_output_like("Out", x)


increment = OpDef(
    "increment",
    inputs=[In("X", "a one-element numeric tensor", dtypes=NUMERIC_DTYPES)],
    outputs=[Out("Out", "X + step, shape and dtype of X (often the X variable itself)")],
    attrs=[Attr("step", "float", 1.0, "the amount added (cast to X's dtype)")],
    infer=_infer_increment,
    differentiable=False,
    doc="Out = X + step, for one-element X such as a loop counter.",
)

OPS = [increment]
