"""transpose2: Out = X with its dims permuted."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dim_eq

from ._common import infer_from_xshape


def _permutation(ctx, x, what="input 'X'"):
    """The 'axis' attribute as a permutation of 0..rank-1 of ``x`` (negatives resolved)."""
    axis = list(ctx.attr("axis"))
    if len(axis) != x.rank:
        ctx.fail(f"attribute 'axis' must have one entry per dim of {what} ({x.name})",
                 expected=f"{x.rank} entries", found=f"axis={axis} for shape {list(x.shape)}")
    perm = []
    for a in axis:
        if not -x.rank <= a < x.rank:
            ctx.fail("attribute 'axis' has an entry out of range",
                     expected=f"entries in [{-x.rank}, {x.rank - 1}]", found=f"axis={axis}")
        perm.append(a + x.rank if a < 0 else a)
    if sorted(perm) != list(range(x.rank)):
        ctx.fail("attribute 'axis' is not a permutation of the dims",
                 expected=f"each of 0..{x.rank - 1} exactly once", found=f"axis={axis}")
    return perm


def _infer_transpose2(ctx):
    x = ctx.input("X")
    perm = _permutation(ctx, x)
    ctx.set_output("Out", [x.shape[a] for a in perm], x.dtype, x.lod_level)
    ctx.set_output("XShape", (0,) + tuple(x.shape), x.dtype)


transpose2 = OpDef(
    "transpose2",
    inputs=[In("X", "the tensor to transpose")],
    outputs=[
        Out("Out", "X with permuted dims: Out.dims[i] = X.dims[axis[i]]"),
        Out("XShape", "[0] + X.dims, kept for the backward pass", intermediate=True),
    ],
    attrs=[
        Attr("axis", "ints", doc="the permutation (negative entries count from the end)"),
        Attr("data_format", "string", "AnyLayout", "layout hint written by Paddle (ignored)"),
    ],
    infer=_infer_transpose2,
    doc="Out = X with dims permuted by axis (numpy.transpose). The gradient is a transpose "
        "by the inverse permutation; it reads XShape.",
)


def _infer_transpose2_grad(ctx):
    x_dims = infer_from_xshape(ctx)
    dout = ctx.input("Out@GRAD")
    # The permutation is checked against X's rank (XShape[1:]), as for the forward op.
    x = ctx.input("XShape")._replace(shape=tuple(x_dims))
    perm = _permutation(ctx, x, "X (XShape[1:])")
    expected = [x_dims[a] for a in perm]
    if dout.rank != len(expected) or not all(dim_eq(a, b) for a, b in zip(dout.shape, expected)):
        ctx.fail(f"input 'Out@GRAD' ({dout.name}) must have the shape of Out, X.dims permuted "
                 f"by axis={list(ctx.attr('axis'))}",
                 expected=f"shape {expected}", found=f"shape {list(dout.shape)}")


# transpose2_grad(XShape, Out@GRAD) -> X@GRAD: Out@GRAD transposed by the inverse permutation.
transpose2_grad = grad_of(
    transpose2, uses=["XShape"], grads=["X"], infer=_infer_transpose2_grad,
    doc="Gradient of transpose2: X@GRAD = Out@GRAD transposed by the inverse of axis; the "
        "shape of X comes from XShape ([0] + X.dims).")

OPS = [transpose2, transpose2_grad]
