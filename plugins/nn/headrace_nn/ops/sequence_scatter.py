"""sequence_scatter: Out = X plus, for each sequence i of Ids/Updates, Updates added at the
columns Ids of row i of X (row i flattened). The gradient: Out@GRAD for X, and for Updates the
Out@GRAD values at the positions they were added to."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import INDEX_DTYPES, describe

DTYPES = ("int32", "int64", "float32", "float64")


def _one_per_row(ctx, slot, meta):
    if meta.rank not in (1, 2) or (meta.rank == 2 and meta.shape[1] not in (1, -1)):
        ctx.fail(f"{describe(slot, meta)} must hold one value per row",
                 expected="shape [n] or [n, 1]", found=f"shape {list(meta.shape)}")
    if not ctx.is_runtime and meta.lod_level < 1:
        ctx.fail(f"{describe(slot, meta)} must be a sequence batch (a LoDTensor)",
                 expected="lod_level 1", found=f"lod_level {meta.lod_level}")


def _infer_sequence_scatter(ctx):
    x, ids, upd = ctx.input("X"), ctx.input("Ids"), ctx.input("Updates")
    if x.rank < 1:
        ctx.fail(f"{describe('X', x)} must have a row dim", expected="rank >= 1",
                 found="a 0-D tensor")
    _one_per_row(ctx, "Ids", ids)
    _one_per_row(ctx, "Updates", upd)
    if upd.dtype != x.dtype:
        ctx.fail(f"{describe('Updates', upd)} must have the dtype of X ({x.name})",
                 expected=x.dtype, found=upd.dtype)
    if ids.shape[0] >= 0 and upd.shape[0] >= 0 and ids.shape[0] != upd.shape[0]:
        ctx.fail(f"{describe('Updates', upd)} must have one value per id of Ids ({ids.name})",
                 expected=f"{ids.shape[0]} rows", found=f"{upd.shape[0]} rows")
    ctx.set_output("Out", x.shape, x.dtype, x.lod_level)


sequence_scatter = OpDef(
    "sequence_scatter",
    inputs=[In("X", "[N, ...]: row i receives sequence i of Updates", dtypes=DTYPES),
            In("Ids", "[n, 1] column indices into a flattened row of X, one LoD level "
               "(at most N sequences)", dtypes=INDEX_DTYPES),
            In("Updates", "[n, 1] the values to add, X's dtype, the LoD of Ids", dtypes=DTYPES)],
    outputs=[Out("Out", "X with the updates added; X's shape")],
    infer=_infer_sequence_scatter,
    doc="Out = X; then for each sequence i of Ids and each of its rows k, "
        "Out[i].flat[Ids[k]] += Updates[k] (repeated ids add up).",
)

# sequence_scatter_grad(Ids, Updates, Out@GRAD) -> X@GRAD, Updates@GRAD.
sequence_scatter_grad = grad_of(
    sequence_scatter, uses=["Ids", "Updates"], grads=["X", "Updates"],
    doc="Gradient of sequence_scatter: X@GRAD = Out@GRAD; Updates@GRAD[k] = Out@GRAD at the "
        "position Updates[k] was added to.")

OPS = [sequence_scatter, sequence_scatter_grad]
