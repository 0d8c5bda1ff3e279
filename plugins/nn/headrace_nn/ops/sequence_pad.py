"""sequence_pad / sequence_unpad: a LoD batch to a padded [sequences, length, ...] tensor and
its lengths, and back. Each one's gradient is the other (the padding gets no gradient)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_of

from ._common import describe

FLOATS = ("float32", "float64")


def _infer_pad(ctx):
    x = ctx.input("X")
    if not ctx.is_runtime and x.lod_level < 1:
        ctx.fail(f"{describe('X', x)} must be a sequence batch (a LoDTensor)",
                 expected="lod_level >= 1", found=f"lod_level {x.lod_level}")
    length = ctx.attr("padded_length")
    if length == 0 or length < -1:
        ctx.fail("attribute 'padded_length' must be positive, or -1 (the longest sequence)",
                 expected="padded_length > 0 or -1", found=f"padded_length = {length}")
    ctx.set_output("Out", [-1, length] + list(x.shape[1:]), x.dtype)
    ctx.set_output("Length", [-1], "int64")


sequence_pad = OpDef(
    "sequence_pad",
    inputs=[In("X", "a sequence batch [rows, ...] (its last LoD level)", dtypes=FLOATS),
            In("PadValue", "the padding: one value, or one row", dtypes=FLOATS)],
    outputs=[Out("Out", "[sequences, padded_length, ...]"),
             Out("Length", "each sequence's length, int64")],
    attrs=[Attr("padded_length", "int", -1, "the padded length (-1: the longest sequence)")],
    infer=_infer_pad,
    doc="Out[s, :n_s] = sequence s, Out[s, n_s:] = PadValue; Length[s] = n_s. A sequence "
        "longer than padded_length is an error.",
)

def _infer_pad_grad(ctx):
    if ctx.has_output("X@GRAD"):
        ctx.set_output_like("X@GRAD", ctx.input("X"))


sequence_pad_grad = OpDef(
    "sequence_pad_grad",
    inputs=[In("X", "the forward X (its LoD)"),
            In("Out@GRAD", "the gradient of the padded Out")],
    outputs=[Out("X@GRAD", "the gradient of X", optional=True)],
    attrs=list(sequence_pad.attrs.values()),
    infer=_infer_pad_grad,
    differentiable=False,
    doc="Gradient of sequence_pad: Out@GRAD's rows within the lengths (Length has none).",
)


def _pad_grad_maker(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("sequence_pad_grad", {"X": ctx.input("X"),
                                         "Out@GRAD": ctx.output_grad("Out")},
                   {"X@GRAD": ctx.input_grad("X")}, dict(ctx.attrs))]


sequence_pad.grad = _pad_grad_maker


def _infer_unpad(ctx):
    x, n = ctx.input("X"), ctx.input("Length")
    if n.rank != 1 and not ctx.is_runtime:
        ctx.fail(f"{describe('Length', n)} must hold one length per sequence",
                 expected="rank 1", found=f"shape {list(n.shape)}")
    if x.rank < 2:
        ctx.fail(f"{describe('X', x)} must be [sequences, length, ...]", expected="rank >= 2",
                 found=f"shape {list(x.shape)}")
    ctx.set_output("Out", [-1] + list(x.shape[2:]), x.dtype, 1)


sequence_unpad = OpDef(
    "sequence_unpad",
    inputs=[In("X", "a padded batch [sequences, length, ...]", dtypes=FLOATS),
            In("Length", "each sequence's length", dtypes=("int32", "int64"))],
    outputs=[Out("Out", "the sequences' rows, with their LoD")],
    infer=_infer_unpad,
    doc="The first Length[s] rows of each X[s], as one LoD batch.",
)

# sequence_unpad_grad(X, Length, Out@GRAD) -> X@GRAD: Out@GRAD padded with zeros.
sequence_unpad_grad = grad_of(sequence_unpad, uses=["X", "Length"], grads=["X"],
                              doc="Gradient of sequence_unpad: Out@GRAD padded with zeros.")

OPS = [sequence_pad, sequence_pad_grad, sequence_unpad, sequence_unpad_grad]
