"""sequence_slice: from each sequence, Length[i] rows starting at row Offset[i] of it. The
gradient puts Out@GRAD back at those rows (zeros elsewhere)."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import describe

FLOATS = ("float32", "float64")


def _infer_sequence_slice(ctx):
    x = ctx.input("X")
    if not ctx.is_runtime and x.lod_level < 1:
        ctx.fail(f"{describe('X', x)} must be a sequence batch (a LoDTensor)",
                 expected="lod_level >= 1", found=f"lod_level {x.lod_level}")
    ctx.set_output("Out", [-1] + list(x.shape[1:]), x.dtype, x.lod_level)


sequence_slice = OpDef(
    "sequence_slice",
    inputs=[In("X", "a sequence batch (its last LoD level)", dtypes=FLOATS),
            In("Offset", "[sequences, 1] each slice's first row in its sequence",
               dtypes=("int32", "int64")),
            In("Length", "[sequences, 1] each slice's length", dtypes=("int32", "int64"))],
    outputs=[Out("Out", "the slices, one sequence each")],
    infer=_infer_sequence_slice,
    doc="Out's sequence i = rows Offset[i] to Offset[i] + Length[i] - 1 of X's sequence i "
        "(which must hold them).",
)

# sequence_slice_grad(X, Offset, Length, Out@GRAD) -> X@GRAD
sequence_slice_grad = grad_of(sequence_slice, uses=["X", "Offset", "Length"], grads=["X"],
                              doc="Gradient of sequence_slice: Out@GRAD at the sliced rows.")

OPS = [sequence_slice, sequence_slice_grad]
