"""lod_tensor_to_array / array_to_lod_tensor / shrink_rnn_memory: a batch of sequences as
time steps (the input and output of a DynamicRNN) and the memory batch that shrinks as
sequences end.

Time step t of the array holds the t-th item of every sequence still running at t, in the
rank table's order (longest first), so the batch shrinks from step to step.
"""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import GradOp, grad_of

from ._common import expect_kind, expect_one_element


def _expect_table(ctx):
    expect_kind(ctx, ctx.input("RankTable"), "lod_rank_table", "RankTable")


def _tail(meta):
    return (-1,) + tuple(meta.shape[1:]) if meta.shape else meta.shape


def _infer_to_array(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, "lod_tensor", "X")
    _expect_table(ctx)
    # Each step keeps X's LoD below the ranked level (level 0 for a DynamicRNN's table).
    ctx.set_output("Out", _tail(x), x.dtype, max(x.lod_level - 1, 0), kind="lod_tensor_array")


def _to_array_grad(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("array_to_lod_tensor",
                   {"X": ctx.output_grad("Out"), "RankTable": ctx.input("RankTable")},
                   {"Out": ctx.input_grad("X")}, {})]


lod_tensor_to_array = OpDef(
    "lod_tensor_to_array",
    inputs=[In("X", "a batch of sequences at the rank table's LoD level"),
            In("RankTable", "the rank table of X (kind lod_rank_table)")],
    outputs=[Out("Out", "the time steps (kind lod_tensor_array)")],
    infer=_infer_to_array,
    grad=_to_array_grad,
    doc="Out[t] holds item t of each sequence longer than t, in rank order (longest first), "
        "with the item's LoD below the ranked level; Out has as many steps as the longest "
        "sequence (none when every sequence is empty). The gradient of X is "
        "array_to_lod_tensor of Out's gradient.",
)


def _infer_from_array(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, "lod_tensor_array", "X")
    _expect_table(ctx)
    ctx.set_output("Out", _tail(x), x.dtype, x.lod_level + 1)


def _from_array_grad(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("lod_tensor_to_array",
                   {"X": ctx.output_grad("Out"), "RankTable": ctx.input("RankTable")},
                   {"Out": ctx.input_grad("X")}, {})]


array_to_lod_tensor = OpDef(
    "array_to_lod_tensor",
    inputs=[In("X", "time steps (kind lod_tensor_array), as lod_tensor_to_array makes them"),
            In("RankTable", "the rank table that ordered them (kind lod_rank_table)")],
    outputs=[Out("Out", "the batch of sequences, in their original order, with the table's "
                 "LoD")],
    infer=_infer_from_array,
    grad=_from_array_grad,
    doc="The inverse of lod_tensor_to_array: sequence RankTable[k] is made of entry k of "
        "X[0], X[1], ... for its length, and the sequences are put back in their original "
        "order under the table's LoD. A step without a value (a gradient nothing wrote) counts "
        "as zeros. The gradient of X is lod_tensor_to_array of Out's gradient.",
)


def _infer_shrink(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, "lod_tensor", "X")
    _expect_table(ctx)
    i = ctx.input("I")
    expect_kind(ctx, i, "lod_tensor", "I")
    expect_one_element(ctx, i, "I")
    ctx.set_output("Out", _tail(x), x.dtype, x.lod_level)


shrink_rnn_memory = OpDef(
    "shrink_rnn_memory",
    inputs=[In("X", "the memory of a DynamicRNN, one row (or sequence) per running sequence"),
            In("RankTable", "the RNN's rank table (kind lod_rank_table)"),
            In("I", "the time step, an int64 tensor of one element", dtypes=("int64",))],
    outputs=[Out("Out", "the first k entries of X, k the number of sequences longer than I")],
    infer=_infer_shrink,
    doc="Out = X's first k rows (or level-0 sequences), k = the number of sequences of "
        "RankTable longer than I: the memory of the sequences still running at step I. The "
        "gradient of X is Out's gradient padded with zero rows.",
)

shrink_rnn_memory_grad = grad_of(
    shrink_rnn_memory, uses=["X"], grads=["X"],
    doc="X@GRAD = Out@GRAD in X's first rows, zeros in the rest (all zeros when Out@GRAD has "
        "no value), with X's LoD.")

OPS = [lod_tensor_to_array, array_to_lod_tensor, shrink_rnn_memory, shrink_rnn_memory_grad]
