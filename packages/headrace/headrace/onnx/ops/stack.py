"""stack (headrace_tensor's stack family): each X unsqueezed at axis, then Concat."""
from ._common import arg_out

__all__ = ["EXPORTERS"]


def _stack(ctx, op):
    xs = op.input("X")
    rank = ctx.rank(xs[0]) + 1
    axis = op.attr("axis")
    axis = axis + rank if axis < 0 else axis
    ctx.node("Concat", [ctx.unsqueeze(x, [axis]) for x in xs], arg_out(op, "Y"), axis=axis)


EXPORTERS = {"stack": _stack}
