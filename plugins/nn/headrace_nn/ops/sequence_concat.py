"""sequence_concat: sequence i of the output is sequence i of every input X, joined in input
order (Paddle's LoD [0, 3, 7] with [0, 7, 9] gives [0, 10, 16]). Its gradient hands each input
its rows of Out@GRAD back."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import numel

from ._common import describe

DTYPES = ("int32", "int64", "float32", "float64")


def _infer_sequence_concat(ctx):
    xs = ctx.inputs("X")
    if len(xs) < 2:
        ctx.fail("input slot 'X' must hold at least two sequence batches",
                 expected=">= 2 variables", found=f"{len(xs)} variable(s)")
    first = xs[0]
    rows, feature = 0, None
    for i, x in enumerate(xs):
        name = describe(f"X[{i}]", x)
        if x.dtype != first.dtype:
            ctx.fail(f"{name} must have the dtype of X[0] ({first.name})",
                     expected=first.dtype, found=x.dtype)
        if x.rank < 1:
            ctx.fail(f"{name} must have a row dim", expected="rank >= 1", found="a 0-D tensor")
        # Paddle reads the first LoD level as row offsets: a second level would make it slice
        # rows by sub-sequence counts, so only one-level batches are taken.
        if (not ctx.is_runtime and x.lod_level < 1) or x.lod_level > 1:
            ctx.fail(f"{name} must be a batch of sequences with one LoD level",
                     expected="lod_level 1", found=f"lod_level {x.lod_level}")
        # Paddle compares the number of features per row, not the dims: [n, 6] joins [m, 2, 3].
        f = numel(x.shape[1:])
        if feature is None or feature < 0:
            feature = f
        elif f >= 0 and f != feature:
            ctx.fail(f"{name} must have as many features per row as the inputs before it",
                     expected=f"{feature} features per row (X[0] {list(first.shape)})",
                     found=f"{f} ({list(x.shape)})")
        rows = rows + x.shape[0] if rows >= 0 and x.shape[0] >= 0 else -1
    ctx.set_output("Out", [rows] + list(first.shape[1:]), first.dtype, 1)


sequence_concat = OpDef(
    "sequence_concat",
    inputs=[In("X", "two or more batches of as many sequences (one LoD level each), one "
               "dtype, the same number of features per row", duplicable=True, dtypes=DTYPES)],
    outputs=[Out("Out", "sequence i = sequence i of X[0], then of X[1], ...; X[0]'s row shape")],
    infer=_infer_sequence_concat,
    doc="Out's sequence i = the rows of sequence i of each X in input order; Out's LoD is the "
        "sum of the inputs' LoD (Paddle's sequence_concat).",
)

# sequence_concat_grad(X, Out@GRAD) -> X@GRAD: each input's rows of Out@GRAD.
sequence_concat_grad = grad_of(
    sequence_concat, uses=["X"], grads=["X"],
    doc="Gradient of sequence_concat: each X gets the rows of Out@GRAD it filled.")

OPS = [sequence_concat, sequence_concat_grad]
