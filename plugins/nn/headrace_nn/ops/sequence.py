"""Ops on LoD sequences: sequence_pool."""
from headrace.ops import Attr, In, OpDef, Out

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

OPS = [sequence_pool]
