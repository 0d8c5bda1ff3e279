"""concat and split (headrace_tensor's concat_split family)."""
from ._common import arg_in, norm_axes
from ._runtime_inputs import refuse_tensor_inputs

__all__ = ["EXPORTERS"]


def _concat(ctx, op):
    refuse_tensor_inputs(ctx, op, ("AxisTensor",))
    xs = op.input("X")
    axis = norm_axes([op.attr("axis")], ctx.rank(xs[0]))[0]
    ctx.node("Concat", xs, op.output("Out"), axis=axis)


def _split(ctx, op):
    refuse_tensor_inputs(ctx, op, ("AxisTensor", "SectionsTensorList"))
    x, outs = arg_in(op, "X"), op.output("Out")
    axis = norm_axes([op.attr("axis")], ctx.rank(x))[0]
    sections = list(op.attr("sections"))
    if op.attr("num"):
        size = ctx.shape(x)[axis]
        if size < 0:
            ctx.fail("split by num needs the split dim's size known", found=ctx.shape(x))
        sections = [size // op.attr("num")] * op.attr("num")
    elif -1 in sections:
        size = ctx.shape(x)[axis]
        if size < 0:
            ctx.fail("split with a -1 section needs the split dim's size known")
        sections[sections.index(-1)] = size - sum(s for s in sections if s != -1)
    ctx.node("Split", [x, ctx.ints(sections)], outs, axis=axis)


EXPORTERS = {"concat": _concat, "split": _split}
