"""sequence_reshape: the rows of each sequence regrouped into rows of new_dim values (the data
unchanged in memory); a sequence of n rows of width M becomes n * M / new_dim rows. The
gradient is Out@GRAD with X's shape."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import numel

from ._common import at_least, describe

DTYPES = ("int32", "int64", "float32", "float64")


def _infer_sequence_reshape(ctx):
    x = ctx.input("X")
    if x.rank != 2:
        ctx.fail(f"{describe('X', x)} must be a 2-D sequence batch [rows, width]",
                 expected="rank 2", found=f"rank {x.rank}, shape {list(x.shape)}")
    if (not ctx.is_runtime and x.lod_level < 1) or x.lod_level > 1:
        ctx.fail(f"{describe('X', x)} must be a batch of sequences with one LoD level "
                 f"(Paddle's sequence_reshape takes only one)",
                 expected="lod_level 1", found=f"lod_level {x.lod_level}")
    new_dim = ctx.attr("new_dim")
    n = numel(x.shape)
    # At build time the row count depends on the LoD; at run time it is numel / new_dim.
    rows = n // new_dim if ctx.is_runtime and n >= 0 else -1
    ctx.set_output("Out", [rows, new_dim], x.dtype, 1)


sequence_reshape = OpDef(
    "sequence_reshape",
    inputs=[In("X", "a 2-D sequence batch [rows, width] with one LoD level", dtypes=DTYPES)],
    outputs=[Out("Out", "[rows * width / new_dim, new_dim], each sequence's length scaled")],
    attrs=[Attr("new_dim", "int", doc="the width of Out's rows; each sequence's "
                "length * width must divide by it", check=at_least(1))],
    infer=_infer_sequence_reshape,
    doc="Out = X's data as rows of new_dim values; sequence i of n rows becomes "
        "n * width / new_dim rows (which must be whole).",
)

# sequence_reshape_grad(X, Out@GRAD) -> X@GRAD: Out@GRAD's data in X's shape and LoD.
sequence_reshape_grad = grad_of(
    sequence_reshape, uses=["X"], grads=["X"],
    doc="Gradient of sequence_reshape: Out@GRAD's data with X's shape and LoD.")

OPS = [sequence_reshape, sequence_reshape_grad]
