"""gather and gather_nd (headrace_tensor's gather family)."""
from ._common import arg_in, arg_out, norm_axes
from ._runtime_inputs import refuse_tensor_inputs

__all__ = ["EXPORTERS"]


def _gather(ctx, op):
    refuse_tensor_inputs(ctx, op, ("Axis",))
    x, index = arg_in(op, "X"), arg_in(op, "Index")
    if ctx.rank(index) == 2:   # [N, 1] indices select like [N]
        index = ctx.squeeze(index, [1])
    axis = norm_axes([op.attr("axis")], ctx.rank(x))[0]
    ctx.node("Gather", [x, index], arg_out(op, "Out"), axis=axis)


def _gather_nd(ctx, op):
    index = arg_in(op, "Index")
    if ctx.dtype(index) != "int64":
        index = ctx.cast(index, "int64")
    ctx.node("GatherND", [arg_in(op, "X"), index], arg_out(op, "Out"))


EXPORTERS = {"gather": _gather, "gather_nd": _gather_nd}
