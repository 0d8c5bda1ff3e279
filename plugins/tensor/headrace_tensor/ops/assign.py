"""assign: Out = a copy of X (a tensor, a tensor array or selected rows)."""
from headrace.ops import In, OpDef, Out

from ._common import TENSOR_KINDS, expect_kind


def _infer_assign(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, TENSOR_KINDS, "X")
    # set_output_like carries the kind: assigning an array gives an array.
    ctx.set_output_like("Out", x)


assign = OpDef(
    "assign",
    inputs=[In("X", "the tensor, tensor array or selected rows to copy")],
    outputs=[Out("Out", "the copy: kind, shape, dtype and LoD level of X")],
    infer=_infer_assign,
    doc="Out = X (a copy). The gradient of X is assign of Out's gradient.",
)

OPS = [assign]
