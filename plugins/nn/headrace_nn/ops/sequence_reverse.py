"""sequence_reverse: the rows of each sequence (the last LoD level) in reverse order, LoD kept;
the bidirectional RNN's backward direction. Its own gradient: reversing Y@GRAD back."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import GradOp

from ._common import describe


def _infer_sequence_reverse(ctx):
    x = ctx.input("X")
    if not ctx.is_runtime and x.lod_level < 1:
        ctx.fail(f"{describe('X', x)} must be a sequence batch (a LoDTensor)",
                 expected="lod_level >= 1", found=f"lod_level {x.lod_level}")
    ctx.set_output_like("Y", x)


sequence_reverse = OpDef(
    "sequence_reverse",
    inputs=[In("X", "a sequence batch [rows, ...]")],
    outputs=[Out("Y", "X with each sequence's rows reversed, X's LoD")],
    infer=_infer_sequence_reverse,
    doc="Y = each sequence of X (its last LoD level) reversed; empty sequences stay empty. "
        "The gradient reverses Y@GRAD the same way.",
)


def _grad(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("sequence_reverse", {"X": ctx.output_grad("Y")}, {"Y": ctx.input_grad("X")},
                   {})]


sequence_reverse.grad = _grad

OPS = [sequence_reverse]
