"""scatter: X with the rows named by Ids replaced by (or, overwrite=False, set to the sum of)
the rows of Updates.

The gradient (scatter_grad) gives X@GRAD = Out@GRAD with the rows at Ids zeroed (those rows of
X never reach Out) and Updates@GRAD = the rows of Out@GRAD at Ids. With overwrite=True a row
named twice keeps its last update only, so the earlier updates get zeros (Paddle gives every
duplicate the gathered row; the exact gradient is zero for the overwritten ones).
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dim_eq

from ._common import INT_INDEX_DTYPES


def _infer_scatter(ctx):
    x, ids, upd = ctx.input("X"), ctx.input("Ids"), ctx.input("Updates")
    if ids.rank not in (0, 1) and not (ids.rank == 2 and ids.shape[1] in (1, -1)):
        ctx.fail(f"input 'Ids' ({ids.name}) must be 1-D or [N, 1]",
                 expected="shape [N] or [N, 1]", found=f"shape {list(ids.shape)}")
    if x.rank == 0:
        ctx.fail(f"input 'X' ({x.name}) must have rank >= 1 (Ids index its rows)",
                 expected="rank >= 1", found="shape []")
    n = ids.shape[0] if ids.rank else 1
    # Updates is [N] + X.shape[1:] (a 0-D Ids: X.shape[1:]).
    expected = ([n] if ids.rank else []) + list(x.shape[1:])
    if len(upd.shape) != len(expected) or \
            not all(dim_eq(a, b) for a, b in zip(upd.shape, expected)):
        ctx.fail(f"input 'Updates' ({upd.name}) must hold one row of X per index of Ids",
                 expected=f"shape {expected}", found=f"shape {list(upd.shape)}")
    if x.dtype is not None and upd.dtype is not None and x.dtype != upd.dtype:
        ctx.fail(f"input 'Updates' ({upd.name}) must have X's dtype",
                 expected=x.dtype, found=upd.dtype)
    ctx.set_output_like("Out", x)


scatter = OpDef(
    "scatter",
    inputs=[In("X", "the tensor to update (rows along dim 0)"),
            In("Ids", "int32/int64 row indices [N] (or [N, 1])", dtypes=INT_INDEX_DTYPES),
            In("Updates", "[N] + X.shape[1:]: the new rows")],
    outputs=[Out("Out", "X with its rows at Ids updated")],
    attrs=[Attr("overwrite", "bool", True, "true: Out[Ids[i]] = Updates[i] in order (the last "
                "of repeated ids wins); false: the rows at Ids are zeroed, then every update "
                "added (repeated ids accumulate)")],
    infer=_infer_scatter,
    doc="Out = X, then Out[Ids[i]] = Updates[i] (overwrite) or Out[Ids] = 0; Out[Ids[i]] += "
        "Updates[i] (not overwrite); every id must lie in [0, X.shape[0]).",
)


def _infer_scatter_grad(ctx):
    dout = ctx.input("Out@GRAD")
    ctx.set_output_like("X@GRAD", dout)
    ctx.set_output_like("Updates@GRAD", ctx.input("Updates"), dtype=dout.dtype)


scatter_grad = grad_of(
    scatter, uses=["Ids", "Updates"], grads=["X", "Updates"], infer=_infer_scatter_grad,
    doc="Gradient of scatter: X@GRAD = Out@GRAD with the rows at Ids zeroed; Updates@GRAD[i] "
        "= Out@GRAD[Ids[i]] (with overwrite, zeros for an update a later one overwrote); "
        "Updates is read for its shape only.")

OPS = [scatter, scatter_grad]
