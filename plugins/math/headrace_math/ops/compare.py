"""Comparisons: less_than, less_equal, greater_than, greater_equal, equal, not_equal.

Out is a bool tensor of the broadcast shape (elementwise ops' alignment rule, ``axis``); none of
them has a gradient.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import elementwise_broadcast

from ._common import ORDERED, at_least_minus_one, same_dtype

# op type -> the relation Out holds
RELATIONS = {
    "less_than": "X < Y",
    "less_equal": "X <= Y",
    "greater_than": "X > Y",
    "greater_equal": "X >= Y",
    "equal": "X == Y",
    "not_equal": "X != Y",
}


def _infer(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    same_dtype(ctx, x, y)
    shape = elementwise_broadcast(ctx, x.shape, y.shape, ctx.attr("axis"))
    ctx.set_output_like("Out", x, shape=shape, dtype="bool")


def make_compare(op_type, relation):
    """The OpDef of the comparison ``relation``."""
    return OpDef(
        op_type,
        inputs=[In("X", "left operand", dtypes=ORDERED),
                In("Y", "right operand, same dtype as X", dtypes=ORDERED)],
        outputs=[Out("Out", f"bool, {relation} elementwise; broadcast shape, LoD of X")],
        attrs=[
            Attr("axis", "int", -1, "where Y's dims align with X's when Y has the lower rank "
                 "(-1: trailing alignment)", check=at_least_minus_one),
            Attr("force_cpu", "bool", False, "keep Out in host memory (a placement hint)"),
        ],
        infer=_infer,
        differentiable=False,
        doc=f"Out = {relation}, elementwise, as bool. X and Y have one dtype; shapes "
            "broadcast as in the elementwise ops (axis aligns a lower-rank operand). "
            "No gradient.",
    )


OPS = [make_compare(t, r) for t, r in RELATIONS.items()]
