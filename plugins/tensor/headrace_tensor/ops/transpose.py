"""transpose2: Out = X with its dims permuted."""
from headrace.ops import Attr, In, OpDef, Out


def _infer_transpose2(ctx):
    x = ctx.input("X")
    axis = list(ctx.attr("axis"))
    if len(axis) != x.rank:
        ctx.fail(f"attribute 'axis' must have one entry per dim of input 'X' ({x.name})",
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

OPS = [transpose2]
