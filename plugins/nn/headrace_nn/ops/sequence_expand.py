"""sequence_expand: X's rows (X without LoD) or sequences (X with one LoD level) repeated as
many times as the matching sequence of Y's LoD level ref_level is long (attention's
per-sequence context broadcast over its steps); sequence_expand_as: each row of X repeated
over the rows of the matching sequence of Y, taking Y's LoD. The gradients sum the copies."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import describe

FLOATS = ("float32", "float64")


def _infer_sequence_expand(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    if not ctx.is_runtime and y.lod_level < 1:
        ctx.fail(f"{describe('Y', y)} must be a sequence batch: its LoD gives the repeats",
                 expected="lod_level >= 1", found=f"lod_level {y.lod_level}")
    if x.lod_level > 1:
        ctx.fail(f"{describe('X', x)} may have at most one LoD level",
                 expected="lod_level 0 or 1", found=f"lod_level {x.lod_level}")
    ctx.set_output("Out", [-1] + list(x.shape[1:]), x.dtype, max(x.lod_level, 1))


sequence_expand = OpDef(
    "sequence_expand",
    inputs=[In("X", "rows, or sequences (one LoD level), to repeat", dtypes=FLOATS),
            In("Y", "its LoD (level ref_level) gives how many times each is repeated")],
    outputs=[Out("Out", "the repeated rows or sequences, with their LoD")],
    attrs=[Attr("ref_level", "int", -1, "the LoD level of Y to read (-1: the last)")],
    infer=_infer_sequence_expand,
    doc="Entry i of X (a row, or a sequence when X has LoD) repeated n_i times, n_i the "
        "length of sequence i of Y's LoD level ref_level; the result's LoD has one sequence "
        "per copy.",
)

# sequence_expand_grad(X, Y, Out@GRAD) -> X@GRAD: each entry's copies summed.
sequence_expand_grad = grad_of(
    sequence_expand, uses=["X", "Y"], grads=["X"],
    doc="Gradient of sequence_expand: the gradients of each entry's copies summed.")



def _infer_sequence_expand_as(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    if not ctx.is_runtime and y.lod_level < 1:
        ctx.fail(f"{describe('Y', y)} must be a sequence batch: its LoD gives the repeats",
                 expected="lod_level >= 1", found=f"lod_level {y.lod_level}")
    ctx.set_output("Out", [y.shape[0]] + list(x.shape[1:]), x.dtype, 1)


sequence_expand_as = OpDef(
    "sequence_expand_as",
    inputs=[In("X", "one row per sequence of Y", dtypes=FLOATS),
            In("Y", "its last LoD level gives how many times each row is repeated")],
    outputs=[Out("Out", "row i of X over the rows of sequence i of Y, with Y's last LoD")],
    infer=_infer_sequence_expand_as,
    doc="Out's sequence i = X[i] repeated n_i times, n_i the length of sequence i of Y (its "
        "last LoD level).",
)

# sequence_expand_as_grad(X, Y, Out@GRAD) -> X@GRAD: each row's copies summed.
sequence_expand_as_grad = grad_of(
    sequence_expand_as, uses=["X", "Y"], grads=["X"],
    doc="Gradient of sequence_expand_as: the gradients of each row's copies summed.")

OPS = [sequence_expand, sequence_expand_grad, sequence_expand_as, sequence_expand_as_grad]
