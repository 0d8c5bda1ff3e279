"""sequence_softmax: a softmax over the rows of each sequence (the last LoD level), X one
value per row ([rows, 1] or [rows])."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import describe

FLOATS = ("float32", "float64")


def _infer_sequence_softmax(ctx):
    x = ctx.input("X")
    if not ctx.is_runtime and x.lod_level < 1:
        ctx.fail(f"{describe('X', x)} must be a sequence batch (a LoDTensor)",
                 expected="lod_level >= 1", found=f"lod_level {x.lod_level}")
    if x.rank not in (1, 2) or (x.rank == 2 and x.shape[1] not in (1, -1)):
        ctx.fail(f"{describe('X', x)} must hold one value per row", expected="[rows, 1] or "
                 "[rows]", found=f"shape {list(x.shape)}")
    ctx.set_output_like("Out", x)


sequence_softmax = OpDef(
    "sequence_softmax",
    inputs=[In("X", "one score per row of a sequence batch", dtypes=FLOATS)],
    outputs=[Out("Out", "the softmax of each sequence's scores, X's shape and LoD")],
    infer=_infer_sequence_softmax,
    doc="Out = exp(X - max) / sum(exp(X - max)) over the rows of each sequence; an empty "
        "sequence has no rows.",
)

# sequence_softmax_grad(Out, Out@GRAD) -> X@GRAD = Out * (Out@GRAD - sum(Out * Out@GRAD)).
sequence_softmax_grad = grad_of(
    sequence_softmax, uses=["X", "Out"], grads=["X"],
    doc="Gradient of sequence_softmax: per sequence, X@GRAD = Out * (Out@GRAD - sum(Out * "
        "Out@GRAD)); X is read for its LoD.")

OPS = [sequence_softmax, sequence_softmax_grad]
