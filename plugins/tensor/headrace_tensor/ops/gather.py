"""gather and gather_nd: entries of X picked by integer indices.

gather takes whole slices of X along ``axis`` (Paddle's gather: Index is 1-D, [N, 1] or 0-D;
the axis may also come from a one-element Axis tensor at run time). gather_nd takes the
entries or slices addressed by the last dim of Index. Their gradients scatter-add Out@GRAD into
zeros of X's shape (repeated indices accumulate); X is read for its shape only.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import INT_INDEX_DTYPES

# -- gather -----------------------------------------------------------------------------------


def _index_count(ctx, index):
    """How many indices a gather Index holds (-1 unknown), None for a 0-D Index."""
    if index.rank == 0:
        return None
    if index.rank == 2 and index.shape[1] in (1, -1):
        return index.shape[0]
    if index.rank != 1:
        ctx.fail(f"input 'Index' ({index.name}) must be 1-D, [N, 1] or 0-D",
                 expected="shape [N], [N, 1] or []", found=f"shape {list(index.shape)}")
    return index.shape[0]


def _infer_gather(ctx):
    x, index = ctx.input("X"), ctx.input("Index")
    count = _index_count(ctx, index)
    if ctx.has_input("Axis"):
        # The axis is known at run time only: the rank is, the dims are not.
        rank = x.rank if count is not None else x.rank - 1
        ctx.set_output("Out", [-1] * rank, x.dtype)
        return
    axis = ctx.attr("axis")
    if not -x.rank <= axis < x.rank:
        ctx.fail(f"attribute 'axis' must name a dim of X ({x.name}, rank {x.rank})",
                 expected=f"{-x.rank} <= axis < {x.rank}", found=f"axis = {axis}")
    axis %= x.rank
    shape = list(x.shape)
    if count is None:
        del shape[axis]
    else:
        shape[axis] = count
    ctx.set_output("Out", shape, x.dtype)


gather = OpDef(
    "gather",
    inputs=[In("X", "the tensor to take slices from"),
            In("Index", "int32/int64 indices into X's dim 'axis': [N], [N, 1] or []",
               dtypes=INT_INDEX_DTYPES),
            In("Axis", "a one-element int tensor: the axis, given at run time (overrides "
               "'axis')", optional=True, dtypes=INT_INDEX_DTYPES)],
    outputs=[Out("Out", "X with dim axis replaced by the N picked slices (removed for a 0-D "
                 "Index)")],
    attrs=[Attr("axis", "int", 0, "the dim of X that Index indexes (negative: from the end)"),
           Attr("overwrite", "bool", True, "Fluid 1.x's gradient mode for repeated indices; "
                "headrace's gradient always accumulates them, the exact gradient")],
    infer=_infer_gather,
    doc="Out = numpy.take(X, Index, axis); every index must lie in [0, X.shape[axis]).",
)


def _infer_x_grad(ctx):
    ctx.set_output_like("X@GRAD", ctx.input("X"), dtype=ctx.input("Out@GRAD").dtype)


gather_grad = grad_of(
    gather, uses=["X", "Index", "Axis"], grads=["X"], infer=_infer_x_grad,
    doc="Gradient of gather: zeros of X's shape into which each slice of Out@GRAD is added at "
        "its index (repeated indices accumulate); X is read for its shape only.")

# -- gather_nd --------------------------------------------------------------------------------


def _infer_gather_nd(ctx):
    x, index = ctx.input("X"), ctx.input("Index")
    if index.rank == 0:
        ctx.fail(f"input 'Index' ({index.name}) must have rank >= 1 (its last dim addresses X)",
                 expected="rank >= 1", found="shape []")
    depth = index.shape[-1]
    if depth > x.rank:
        ctx.fail(f"the last dim of Index ({index.name}) addresses more dims than X "
                 f"({x.name}) has", expected=f"Index.shape[-1] <= {x.rank}",
                 found=f"Index{list(index.shape)}, X{list(x.shape)}")
    if depth < 0:
        # The tail of X that each index selects is unknown, and so is Out's rank.
        ctx.fail(f"the last dim of Index ({index.name}) must be known when the program is "
                 f"built", expected="Index.shape[-1] >= 0", found=f"Index{list(index.shape)}")
    ctx.set_output("Out", list(index.shape[:-1]) + list(x.shape[depth:]), x.dtype)


gather_nd = OpDef(
    "gather_nd",
    inputs=[In("X", "the tensor to take entries from"),
            In("Index", "int32/int64 [..., k]: each row of the last dim addresses X's first k "
               "dims", dtypes=INT_INDEX_DTYPES)],
    outputs=[Out("Out", "Index.shape[:-1] + X.shape[k:]")],
    infer=_infer_gather_nd,
    doc="Out[i...] = X[Index[i..., 0], ..., Index[i..., k-1]]; each index component must lie "
        "in [0, the size of the dim it addresses).",
)

gather_nd_grad = grad_of(
    gather_nd, uses=["X", "Index"], grads=["X"], infer=_infer_x_grad,
    doc="Gradient of gather_nd: zeros of X's shape into which Out@GRAD is added at the "
        "addressed entries (repeated ones accumulate); X is read for its shape only.")

OPS = [gather, gather_grad, gather_nd, gather_nd_grad]
