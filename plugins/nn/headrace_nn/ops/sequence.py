"""Ops on LoD sequences: sequence_pool."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import describe

POOL_TYPES = ("AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST")


def _infer_sequence_pool(ctx):
    x = ctx.input("X")
    # Only the build-time desc states a lod_level; at run time the LoD travels with the tensor
    # and the kernel checks it (as Paddle does).
    if not ctx.is_runtime and x.lod_level < 1:
        ctx.fail(f"{describe('X', x)} must be a sequence batch (a LoDTensor)",
                 expected="lod_level >= 1", found=f"lod_level {x.lod_level}")
    if x.rank < 1:
        ctx.fail(f"{describe('X', x)} must have a row dim", expected="rank >= 1",
                 found=f"shape {list(x.shape)}")
    # One row per sequence of the last LoD level: a count the shape of X does not tell.
    shape = [-1] + list(x.shape[1:])
    lod_level = max(x.lod_level - 1, 0)
    ctx.set_output("Out", shape, x.dtype, lod_level)
    ctx.set_output("MaxIndex", shape, "int32")


sequence_pool = OpDef(
    "sequence_pool",
    inputs=[In("X", "sequence batch [rows, ...] with lod_level >= 1",
               dtypes=("float32", "float64"))],
    outputs=[Out("Out", "[sequences, ...], X's dtype, lod_level of X minus 1"),
             Out("MaxIndex", "int32, Out's shape: the row of X each MAX came from (MAX only)",
                 intermediate=True, dtypes=("int32",))],
    attrs=[
        Attr("pooltype", "string", "AVERAGE", "how the rows of a sequence are combined",
             choices=POOL_TYPES),
        Attr("pad_value", "float", 0.0, "the output row of an empty sequence"),
        Attr("is_test", "bool", False, "inference mode (MaxIndex need not be kept)"),
    ],
    infer=_infer_sequence_pool,
    doc="Out[s] pools the rows of sequence s (the last LoD level): AVERAGE mean, SUM sum, "
        "SQRT sum / sqrt(length), MAX elementwise max (MaxIndex records the row), LAST / FIRST "
        "the last / first row; an empty sequence gives pad_value.",
)



def _infer_sequence_pool_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    if dout.rank != x.rank or dout.dtype != x.dtype:
        ctx.fail(f"{describe('Out@GRAD', dout)} must be like Out: X's dtype and X's rank (one "
                 f"row per sequence)", expected=f"{x.dtype}, rank {x.rank}",
                 found=f"{dout.dtype} Out@GRAD{list(dout.shape)}")
    ctx.set_output_like("X@GRAD", x)


# sequence_pool_grad(X, MaxIndex, Out@GRAD) -> X@GRAD (with X's LoD).
sequence_pool_grad = grad_of(
    sequence_pool, uses=["X", "MaxIndex"], grads=["X"], infer=_infer_sequence_pool_grad,
    doc="Gradient of sequence_pool: each sequence's Out@GRAD row goes back to its rows: "
        "AVERAGE / length, SUM as is, SQRT / sqrt(length), MAX to the row in MaxIndex, "
        "LAST / FIRST to that row; empty sequences and other rows get 0. X@GRAD has X's LoD; "
        "X is read for its LoD and shape.")

OPS = [sequence_pool, sequence_pool_grad]
