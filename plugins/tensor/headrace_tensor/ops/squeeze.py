"""squeeze2 and unsqueeze2: dims of size 1 removed or inserted (Paddle's ops), the same
elements in the same order.

Like reshape2 they write XShape = [0] + X.dims, which carries X's shape to the backward pass,
and their gradients are reshapes of Out@GRAD to XShape[1:].

squeeze2 follows Paddle 2+: ``axes = []`` removes every dim of size 1; a listed dim of another
size stays. When the program is built a listed dim that is unknown (-1) is taken to be 1, as
Paddle does; if it is not 1 at run time the kernel refuses it rather than give Out another rank
than the program declared. unsqueeze2 inserts its axes one after the other, each counted in the
rank reached so far (negative: from the end of it); the axes may come from int tensors.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import INT_INDEX_DTYPES, expect_one_element
from .reshape import _infer_reshape_grad


def squeezed_dims(ctx, dims, axes):
    """Which dims of ``dims`` squeeze2 removes (Paddle's build-time rule: -1 counts as 1)."""
    rank = len(dims)
    if not axes:
        return {k for k, d in enumerate(dims) if d == 1}
    out = set()
    for a in axes:
        valid = -rank <= a < rank if rank else a in (-1, 0)  # (Paddle lets a 0-D X name 0)
        if not valid:
            ctx.fail(f"attribute 'axes' names a dim X does not have (rank {rank})",
                     expected=f"axes in [{-rank}, {rank - 1}]" if rank else "-1 or 0 for 0-D X",
                     found=f"axes={list(axes)}")
        if rank and dims[a % rank] in (1, -1):
            out.add(a % rank)
    return out


def _infer_squeeze2(ctx):
    x = ctx.input("X")
    gone = squeezed_dims(ctx, list(x.shape), list(ctx.attr("axes")))
    ctx.set_output("Out", [d for k, d in enumerate(x.shape) if k not in gone], x.dtype,
                   x.lod_level)
    ctx.set_output("XShape", (0,) + tuple(x.shape), x.dtype)


squeeze2 = OpDef(
    "squeeze2",
    inputs=[In("X", "the tensor to squeeze")],
    outputs=[Out("Out", "X without the squeezed dims (same data)"),
             Out("XShape", "[0] + X.dims, kept for the backward pass", intermediate=True)],
    attrs=[Attr("axes", "ints", [], "the dims to remove where they are 1 (negative: from the "
                "end); [] removes every dim of size 1")],
    infer=_infer_squeeze2,
    doc="Out = X with the listed dims of size 1 removed (every dim of size 1 for axes=[]); a "
        "listed dim of another size stays. The gradient is squeeze2_grad, which reads XShape.",
)


def unsqueezed(ctx, dims, axes):
    """``dims`` with a 1 inserted at each of ``axes`` in turn."""
    out = list(dims)
    for a in axes:
        rank = len(out)
        if not -rank - 1 <= a <= rank:
            ctx.fail(f"attribute 'axes' inserts at {a}, outside a rank-{rank} shape (axes are "
                     f"applied in turn)", expected=f"axis in [{-rank - 1}, {rank}]",
                     found=f"axes={list(axes)} for X of rank {len(dims)}")
        out.insert(a + rank + 1 if a < 0 else a, 1)
    return out


def _infer_unsqueeze2(ctx):
    x = ctx.input("X")
    if ctx.has_input("AxesTensor"):
        t = ctx.input("AxesTensor")
        if t.rank != 1:
            ctx.fail(f"input 'AxesTensor' ({t.name}) must be 1-D", expected="rank 1",
                     found=f"shape {list(t.shape)}")
        n = t.shape[0]
        if n < 0:
            ctx.fail(f"the length of input 'AxesTensor' ({t.name}) is unknown, so Out's rank "
                     f"is", expected="AxesTensor of known length", found=f"{list(t.shape)}")
        out = [-1] * (x.rank + n)
    elif ctx.has_input("AxesTensorList"):
        metas = ctx.inputs("AxesTensorList")
        for m in metas:
            expect_one_element(ctx, m, "AxesTensorList")
        out = [-1] * (x.rank + len(metas))
    else:
        out = unsqueezed(ctx, list(x.shape), list(ctx.attr("axes")))
    ctx.set_output("Out", out, x.dtype, x.lod_level)
    ctx.set_output("XShape", (0,) + tuple(x.shape), x.dtype)


unsqueeze2 = OpDef(
    "unsqueeze2",
    inputs=[In("X", "the tensor to unsqueeze"),
            In("AxesTensor", "1-D int tensor holding the axes (overrides 'axes')",
               optional=True, dtypes=INT_INDEX_DTYPES),
            In("AxesTensorList", "one-element int tensors holding the axes (overrides 'axes')",
               optional=True, duplicable=True, dtypes=INT_INDEX_DTYPES)],
    outputs=[Out("Out", "X with the new dims of size 1 (same data)"),
             Out("XShape", "[0] + X.dims, kept for the backward pass", intermediate=True)],
    attrs=[Attr("axes", "ints", [], "where to insert dims of size 1, one after the other, each "
                "counted in the rank reached so far (negative: from its end)")],
    infer=_infer_unsqueeze2,
    doc="Out = X with a dim of size 1 inserted at each of axes in turn. The gradient is "
        "unsqueeze2_grad, which reads XShape.",
)

_GRAD_DOC = ("Gradient of {op}: X@GRAD = Out@GRAD with the shape of X, read from XShape "
             "([0] + X.dims).")
squeeze2_grad = grad_of(squeeze2, uses=["XShape"], grads=["X"], infer=_infer_reshape_grad,
                        doc=_GRAD_DOC.format(op="squeeze2"))
# (the axes tensors are integers and get no gradient)
unsqueeze2_grad = grad_of(unsqueeze2, uses=["XShape"], grads=["X"], infer=_infer_reshape_grad,
                          doc=_GRAD_DOC.format(op="unsqueeze2"))

OPS = [squeeze2, unsqueeze2, squeeze2_grad, unsqueeze2_grad]
