"""Embedding lookups: lookup_table (Ids [..., 1]) and lookup_table_v2 (Ids of any shape)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import expect_rank

from ._common import FLOATS, INDEX_DTYPES, at_least, describe


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

OPS = [lookup_table, lookup_table_v2]
