"""unstack: X cut along ``axis`` into its ``num`` slices, that axis removed (StaticRNN's time
steps). The gradient stacks the slices' gradients back."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp


def _axis(ctx, rank):
    axis = ctx.attr("axis")
    if not -rank <= axis < rank:
        ctx.fail(f"attribute 'axis' must name a dim of X (rank {rank})",
                 expected=f"{-rank} <= axis < {rank}", found=f"axis = {axis}")
    return axis + rank if axis < 0 else axis


def _infer_unstack(ctx):
    x = ctx.input("X")
    axis = _axis(ctx, len(x.shape))
    num, n_out = ctx.attr("num"), ctx.num_outputs("Y")
    if x.shape[axis] >= 0 and x.shape[axis] != num:
        ctx.fail(f"attribute 'num' must be X's size along axis {axis}",
                 expected=f"num = {x.shape[axis]}", found=f"num = {num}")
    if n_out != num:
        ctx.fail("output 'Y' must be bound to 'num' variables",
                 expected=f"{num} variables", found=f"{n_out}")
    shape = [d for k, d in enumerate(x.shape) if k != axis]
    for i in range(n_out):
        ctx.set_output("Y", shape, x.dtype, index=i)


unstack = OpDef(
    "unstack",
    inputs=[In("X", "the tensor to cut")],
    outputs=[Out("Y", "its slices along axis, that axis removed", duplicable=True)],
    attrs=[Attr("axis", "int", 0, "the axis to cut along (negative: from the end)"),
           Attr("num", "int", doc="the number of slices: X's size along axis")],
    infer=_infer_unstack,
    doc="Y[k] = X[..., k, ...] along axis (numpy.take). The gradient is unstack_grad, a stack "
        "of Y's gradients (zeros where one has none).",
)


def _infer_unstack_grad(ctx):
    gs = ctx.inputs("Y@GRAD")
    axis = ctx.attr("axis")
    rank = len(gs[0].shape) + 1
    axis = axis + rank if axis < 0 else axis
    shape = list(gs[0].shape)
    shape.insert(axis, len(gs))
    ctx.set_output("X@GRAD", shape, gs[0].dtype)


unstack_grad = OpDef(
    "unstack_grad",
    inputs=[In("Y@GRAD", "the slices' gradients", duplicable=True)],
    outputs=[Out("X@GRAD", "their stack along axis")],
    attrs=[Attr("axis", "int", 0, "as the forward op's"), Attr("num", "int", 0, "as the "
                                                                "forward op's")],
    infer=_infer_unstack_grad,
    differentiable=False,
    doc="Gradient of unstack: X@GRAD = stack(Y@GRAD, axis); a slice without a gradient "
        "(None) counts as zeros.",
)


def _unstack_grad_maker(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("unstack_grad", {"Y@GRAD": ctx.output_grad("Y")},
                   {"X@GRAD": ctx.input_grad("X")},
                   {"axis": ctx.attrs["axis"], "num": ctx.attrs["num"]})]


unstack.grad = _unstack_grad_maker

OPS = [unstack, unstack_grad]
