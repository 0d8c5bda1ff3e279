"""print: Out = In, and In is written to stdout as Paddle's print op writes it (a debugging
op; Paddle's names: input ``In``, output ``Out``, the same attributes).

Its gradient is another ``print`` with ``is_forward`` false: it passes Out's gradient through to
In's and prints it, so ``print_phase`` chooses which of the two ops write (FORWARD, BACKWARD or
BOTH). ``print_tensor_layout`` is kept for Paddle's programs and has nothing to print here.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp

from ._common import expect_kind

PHASES = ("FORWARD", "BACKWARD", "BOTH")


def _infer_print(ctx):
    x = ctx.input("In")
    expect_kind(ctx, x, "lod_tensor", "In")
    ctx.set_output_like("Out", x)


print_op = OpDef(
    "print",
    inputs=[In("In", "the tensor to print")],
    outputs=[Out("Out", "In passed through: same shape, dtype and LoD")],
    attrs=[
        Attr("first_n", "int", -1, "print only the first first_n runs of this op (-1: every)"),
        Attr("message", "string", "", "a message printed before the tensor"),
        Attr("summarize", "int", 20, "how many values to print (-1: all)",
             check=lambda v: None if v >= -1 else "must be -1 (all) or a count >= 0"),
        Attr("print_tensor_name", "bool", True, "print the variable's name"),
        Attr("print_tensor_type", "bool", True, "print the dtype"),
        Attr("print_tensor_shape", "bool", True, "print the shape"),
        Attr("print_tensor_layout", "bool", True,
             "Paddle's layout line (headrace tensors have no layout: nothing is printed)"),
        Attr("print_tensor_lod", "bool", True, "print the LoD"),
        Attr("print_phase", "string", "BOTH", "which pass prints: the forward op, its "
             "gradient op, or both", choices=PHASES),
        Attr("is_forward", "bool", True, "true for the op a layer appends, false for the "
             "gradient op made from it"),
    ],
    infer=_infer_print,
    doc="Out = In; In (its name, message, LoD, place, shape, dtype and first values) is "
        "written to stdout when the op runs and print_phase allows it.",
)

OPS = [print_op]


def _print_grad(ctx):
    # Out = In, so In@GRAD = Out@GRAD: a print op passes it through, printing the gradient.
    if not ctx.wants("In"):
        return []
    attrs = dict(ctx.attrs, is_forward=False)
    return [GradOp("print", {"In": ctx.output_grad("Out")}, {"Out": ctx.input_grad("In")},
                   attrs)]


print_op.grad = _print_grad
