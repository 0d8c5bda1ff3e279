"""lod_rank_table / max_sequence_len / reorder_lod_tensor_by_rank: the sequences of a batch
ranked by length, longest first, as a DynamicRNN walks them.

A LoDRankTable (variable kind ``lod_rank_table``) holds, for one LoD level of a tensor, the
(index, length) of each sequence sorted by length descending (stable: equal lengths keep
their order), and the LoD levels above that level.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp

from ._common import expect_kind


def _infer_rank_table(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, "lod_tensor", "X")
    level = ctx.attr("level")
    ctx.expect(level < x.lod_level, f"input 'X' ({x.name}) has no LoD level {level} to rank",
               expected=f"lod_level > {level}", found=f"lod_level {x.lod_level}")
    ctx.set_output("Out", (), None, kind="lod_rank_table")


lod_rank_table = OpDef(
    "lod_rank_table",
    inputs=[In("X", "a tensor with LoD (only its LoD is read)")],
    outputs=[Out("Out", "the rank table (kind lod_rank_table)")],
    attrs=[Attr("level", "int", 0, "the LoD level whose sequences are ranked",
                check=lambda v: "must be >= 0" if v < 0 else None)],
    infer=_infer_rank_table,
    differentiable=False,
    doc="Out ranks the sequences of X's LoD level `level` by length, longest first; equal "
        "lengths keep their order. Empty sequences rank last.",
)


def _expect_table(ctx):
    expect_kind(ctx, ctx.input("RankTable"), "lod_rank_table", "RankTable")


def _infer_max_len(ctx):
    _expect_table(ctx)
    ctx.set_output("Out", (1,), "int64")


max_sequence_len = OpDef(
    "max_sequence_len",
    inputs=[In("RankTable", "the rank table (kind lod_rank_table)")],
    outputs=[Out("Out", "the length of the longest sequence, an int64 tensor of shape [1]")],
    infer=_infer_max_len,
    differentiable=False,
    doc="Out = the length of the first (longest) sequence of RankTable; 0 for a table of no "
        "sequences.",
)


def _infer_reorder(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, "lod_tensor", "X")
    _expect_table(ctx)
    ctx.set_output_like("Out", x)


def _reorder_grad(ctx):
    if not ctx.wants("X"):
        return []
    # Paddle's slots: the grad op reads Out's gradient as X and writes X's gradient as Out.
    return [GradOp("reorder_lod_tensor_by_rank_grad",
                   {"X": ctx.output_grad("Out"), "RankTable": ctx.input("RankTable")},
                   {"Out": ctx.input_grad("X")}, {})]


reorder_lod_tensor_by_rank = OpDef(
    "reorder_lod_tensor_by_rank",
    inputs=[In("X", "a batch of sequences (LoD level 0), or of rows when X has no LoD"),
            In("RankTable", "the order (kind lod_rank_table), possibly of another tensor")],
    outputs=[Out("Out", "X's entries in rank order, each with its LoD")],
    infer=_infer_reorder,
    grad=_reorder_grad,
    doc="Out holds the entries of X (sequences of its LoD level 0, or rows) in the order of "
        "RankTable's indices: entry RankTable[k].index becomes entry k. X must have one entry "
        "per sequence of the table. The gradient reorders back "
        "(reorder_lod_tensor_by_rank_grad).",
)


reorder_lod_tensor_by_rank_grad = OpDef(
    "reorder_lod_tensor_by_rank_grad",
    inputs=[In("X", "the gradient of the forward Out (entries in rank order)"),
            In("RankTable", "the forward op's rank table")],
    outputs=[Out("Out", "the gradient of the forward X (entries in their original order)")],
    infer=_infer_reorder,
    differentiable=False,
    doc="Out's entry RankTable[k].index = X's entry k: the inverse of "
        "reorder_lod_tensor_by_rank.",
)

OPS = [lod_rank_table, max_sequence_len, reorder_lod_tensor_by_rank,
       reorder_lod_tensor_by_rank_grad]
