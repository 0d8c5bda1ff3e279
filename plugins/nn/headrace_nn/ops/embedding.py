"""Embedding lookups: lookup_table (Ids [..., 1]) and lookup_table_v2 (Ids of any shape)."""
from headrace.ops import Attr, DictInferContext, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import expect_rank

from ._common import FLOATS, INDEX_DTYPES, at_least, describe, expect_same_shape


def _table(ctx):
    """W's [V, D], after checking padding_idx against V."""
    w = ctx.input("W")
    expect_rank(ctx, w, 2, "W")
    vocab, pad = w.shape[0], ctx.attr("padding_idx")
    # -1 means no padding row; Paddle's layers turn other negative indices into V + idx.
    if pad != -1 and vocab >= 0 and pad >= vocab:
        ctx.fail(f"attribute 'padding_idx' is not a row of {describe('W', w)}",
                 expected=f"-1 or an index in [0, {vocab - 1}]", found=pad)
    return w


def _infer_lookup_table(ctx):
    w, ids = _table(ctx), ctx.input("Ids")
    if ids.rank < 1 or ids.shape[-1] not in (1, -1):
        ctx.fail(f"{describe('Ids', ids)} must end in a dim of 1 (use lookup_table_v2 for "
                 f"ids without it)", expected="shape [..., 1]", found=f"Ids{list(ids.shape)}")
    ctx.set_output("Out", list(ids.shape[:-1]) + [w.shape[1]], w.dtype, ids.lod_level)


def _infer_lookup_table_v2(ctx):
    w, ids = _table(ctx), ctx.input("Ids")
    ctx.set_output("Out", list(ids.shape) + [w.shape[1]], w.dtype, ids.lod_level)


def _attrs():
    return [
        Attr("padding_idx", "long", -1, "a row of W whose lookups give zeros (and no "
             "gradient); -1: none", check=at_least(-1)),
        Attr("is_sparse", "bool", False, "the gradient of W is a selected_rows"),
        Attr("is_distributed", "bool", False, "W lives on parameter servers (Paddle)"),
        Attr("remote_prefetch", "bool", False, "prefetch rows from parameter servers (Paddle)"),
    ]


lookup_table = OpDef(
    "lookup_table",
    inputs=[In("W", "the embedding table [V, D]", dtypes=FLOATS),
            In("Ids", "int64 row ids [..., 1]", dtypes=("int64",))],
    outputs=[Out("Out", "Ids.dims[:-1] + [D], W's dtype, Ids' LoD")],
    attrs=_attrs(),
    infer=_infer_lookup_table,
    doc="Out[i...] = W[Ids[i..., 0]], zeros where the id is padding_idx. Ids out of [0, V) "
        "are an error at run time. The gradient of W scatters Out@GRAD into the looked-up "
        "rows (dense, or selected_rows when is_sparse).",
)

lookup_table_v2 = OpDef(
    "lookup_table_v2",
    inputs=[In("W", "the embedding table [V, D]", dtypes=FLOATS),
            In("Ids", "int32/int64 row ids of any shape", dtypes=INDEX_DTYPES)],
    outputs=[Out("Out", "Ids.dims + [D], W's dtype, Ids' LoD")],
    attrs=_attrs(),
    infer=_infer_lookup_table_v2,
    doc="Out[i...] = W[Ids[i...]], zeros where the id is padding_idx (the Paddle 2.x "
        "embedding: no trailing 1 on Ids). Gradient as lookup_table's.",
)



def _grad_infer(forward_infer):
    """The grad ops' rule: Out@GRAD must have Out's shape; W@GRAD is like W (dense)."""
    def infer(ctx):
        w, ids = ctx.input("W"), ctx.input("Ids")
        if ids.dtype not in INDEX_DTYPES:
            ctx.fail(f"{describe('Ids', ids)} must hold row ids", expected=" or ".join(
                INDEX_DTYPES), found=ids.dtype)
        # Out's shape from the forward rule, run on a context that records it.
        probe = DictInferContext(ctx.op_type, {"W": [w], "Ids": [ids]}, {"Out": ["out"]},
                                 {"padding_idx": ctx.attr("padding_idx")})
        forward_infer(probe)
        out = probe.results["Out"][0]
        expect_same_shape(ctx, out, ctx.input("Out@GRAD"), "Out", "Out@GRAD", "Out")
        ctx.set_output_like("W@GRAD", w)
    return infer


_GRAD_DOC = ("Gradient of {}: W@GRAD [V, D] (dense, also when is_sparse) is zero except at the "
             "looked-up rows, where the Out@GRAD rows of each id are added up (repeated ids "
             "accumulate); padding_idx lookups add nothing. Ids get no gradient; W is read for "
             "its shape.")

# lookup_table_grad(W, Ids, Out@GRAD) -> W@GRAD, and the same for v2.
lookup_table_grad = grad_of(lookup_table, uses=["W", "Ids"], grads=["W"],
                            infer=_grad_infer(_infer_lookup_table),
                            doc=_GRAD_DOC.format("lookup_table"))
lookup_table_v2_grad = grad_of(lookup_table_v2, uses=["W", "Ids"], grads=["W"],
                               infer=_grad_infer(_infer_lookup_table_v2),
                               doc=_GRAD_DOC.format("lookup_table_v2"))

OPS = [lookup_table, lookup_table_v2, lookup_table_grad, lookup_table_v2_grad]
