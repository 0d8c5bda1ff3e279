"""cumsum: running sums along an axis (or over the flattened X), inclusive or exclusive,
forward or reversed.

Its gradient is Paddle's: a cumsum of Out@GRAD in the other direction with the same
``exclusive`` (d out_i / d x_j = 1 exactly when x_j is summed into out_i). With ``flatten`` on
an X of rank other than 1, Out is 1-D while X@GRAD has X's shape: that case is cumsum_grad
(Paddle 3's op of that name), which reshapes the reversed sum to X's shape.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_of
from headrace.ops.shape import numel

from ._common import NUMERIC


def _infer_cumsum(ctx):
    x = ctx.input("X")
    if ctx.attr("flatten"):
        ctx.set_output("Out", [numel(x.shape)], x.dtype)
        return
    axis = ctx.attr("axis")
    # A 0-D X is its own running sum (axis 0 or -1, as Paddle allows).
    rank = max(x.rank, 1)
    if not -rank <= axis < rank:
        ctx.fail(f"attribute 'axis' must name a dim of X ({x.name}, rank {x.rank})",
                 expected=f"{-rank} <= axis < {rank}", found=f"axis = {axis}")
    ctx.set_output_like("Out", x)


cumsum = OpDef(
    "cumsum",
    inputs=[In("X", "the tensor to sum", dtypes=NUMERIC)],
    outputs=[Out("Out", "the running sums: X's shape, or [numel] when flatten")],
    attrs=[Attr("axis", "int", -1, "the dim to sum along (negative: from the end)"),
           Attr("flatten", "bool", False, "sum over the flattened X (Out is 1-D)"),
           Attr("exclusive", "bool", False, "leave each element out of its own sum (the "
                "first sum is 0)"),
           Attr("reverse", "bool", False, "sum from the end of the axis")],
    infer=_infer_cumsum,
    doc="Out[..., i, ...] = sum of X[..., j, ...] for j <= i along axis (j < i when "
        "exclusive; j >= i / j > i when reverse).",
)


def _infer_cumsum_grad(ctx):
    ctx.set_output_like("X@GRAD", ctx.input("X"), dtype=ctx.input("Out@GRAD").dtype)


cumsum_grad = grad_of(
    cumsum, uses=["X"], infer=_infer_cumsum_grad,
    doc="Gradient of a flattening cumsum: the cumsum of Out@GRAD in the other direction "
        "(same exclusive), reshaped to X's shape; X is read for its shape only.")


def _cumsum_grad_maker(ctx, _grad_op=cumsum.grad):
    if not ctx.wants("X"):
        return []
    attrs = dict(ctx.attrs)
    if attrs.get("flatten", False):
        return _grad_op(ctx)  # cumsum_grad: Out@GRAD is 1-D, X@GRAD has X's shape
    attrs["reverse"] = not attrs.get("reverse", False)
    return [GradOp("cumsum", {"X": ctx.output_grad("Out")}, {"Out": ctx.input_grad("X")},
                   attrs)]


cumsum.grad = _cumsum_grad_maker

OPS = [cumsum, cumsum_grad]
