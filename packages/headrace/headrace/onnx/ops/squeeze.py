"""squeeze2 and unsqueeze2 (headrace_tensor's squeeze family)."""
from ._common import arg_in, arg_out, norm_axes
from ._runtime_inputs import refuse_tensor_inputs

__all__ = ["EXPORTERS"]


def _squeeze2(ctx, op):
    # Paddle drops only the listed dims that are 1 (no axes: every dim of size 1), so the axes
    # are chosen from X's declared shape; a listed dim of unknown size cannot be decided.
    x = arg_in(op, "X")
    shape = ctx.shape(x)
    axes = norm_axes(list(op.attr("axes")), len(shape)) or list(range(len(shape)))
    if any(shape[a] < 0 for a in axes):
        ctx.fail("squeeze2 of a dim of unknown size (Paddle drops it only if it is 1)",
                 found=f"X's shape {shape}, axes {list(op.attr('axes'))}")
    ctx.squeeze(x, sorted({a for a in axes if shape[a] == 1}), arg_out(op, "Out"))


def _unsqueeze2(ctx, op):
    # Paddle inserts the axes one after the other, each counted in the shape so far; ONNX's
    # axes are positions in Out: replay the insertions to find them.
    refuse_tensor_inputs(ctx, op, ("AxesTensor", "AxesTensorList"))
    x = arg_in(op, "X")
    dims = [False] * ctx.rank(x)
    for axis in op.attr("axes"):
        axis = axis + len(dims) + 1 if axis < 0 else axis
        dims.insert(min(axis, len(dims)), True)
    ctx.unsqueeze(x, [i for i, new in enumerate(dims) if new], arg_out(op, "Out"))


EXPORTERS = {"squeeze2": _squeeze2, "unsqueeze2": _unsqueeze2}
