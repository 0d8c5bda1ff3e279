"""Logical ops on bool tensors: logical_and, logical_or, logical_xor (NumPy broadcasting) and
logical_not. Bool in, bool out, no gradient."""
from headrace.ops import In, OpDef, Out
from headrace.ops.shape import broadcast_shapes, same_as

from ._common import BOOL

# op type -> what Out holds
BINARY = {
    "logical_and": "X and Y",
    "logical_or": "X or Y",
    "logical_xor": "X xor Y",
}


def _infer_binary(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    shape = broadcast_shapes(ctx, x.shape, y.shape, f"X ({x.name})", f"Y ({y.name})")
    ctx.set_output_like("Out", x, shape=shape, dtype="bool")


def make_logical(op_type, meaning):
    """The OpDef of a binary logical op."""
    return OpDef(
        op_type,
        inputs=[In("X", "bool tensor", dtypes=BOOL), In("Y", "bool tensor", dtypes=BOOL)],
        outputs=[Out("Out", f"bool, {meaning} elementwise; broadcast shape, LoD of X")],
        infer=_infer_binary,
        differentiable=False,
        doc=f"Out = {meaning}, elementwise over bool tensors; shapes broadcast as in NumPy.",
    )


logical_not = OpDef(
    "logical_not",
    inputs=[In("X", "bool tensor", dtypes=BOOL)],
    outputs=[Out("Out", "bool, not X; shape and LoD of X")],
    infer=same_as("X"),
    differentiable=False,
    doc="Out = not X, elementwise over a bool tensor.",
)

OPS = [make_logical(t, m) for t, m in BINARY.items()] + [logical_not]
