"""assign: Out = a copy of X (a tensor, a tensor array or selected rows)."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import GradOp

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


def _assign_grad(ctx):
    # Out = X, so X@GRAD = Out@GRAD: another assign (a copy, as the forward op makes one).
    if not ctx.wants("X"):
        return []
    return [GradOp("assign", {"X": ctx.output_grad("Out")}, {"Out": ctx.input_grad("X")}, {})]


assign.grad = _assign_grad
