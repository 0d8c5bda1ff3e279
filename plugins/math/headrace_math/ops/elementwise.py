"""Binary elementwise arithmetic with Paddle's broadcasting: elementwise_add, _sub, _mul, _div,
_max, _min, _pow. One factory makes all seven; they differ only in name and formula."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import elementwise_broadcast

from ._common import NUMERIC, at_least_minus_one, same_dtype

# op type -> what Out holds, elementwise after broadcasting.
FORMULAS = {
    "elementwise_add": "X + Y",
    "elementwise_sub": "X - Y",
    "elementwise_mul": "X * Y",
    "elementwise_div": "X / Y (integer inputs truncate toward zero)",
    "elementwise_max": "max(X, Y)",
    "elementwise_min": "min(X, Y)",
    "elementwise_pow": "X ** Y",
}

AXIS_DOC = ("where Y's first dim lines up with X's when Y has the lower rank "
            "(-1: trailing alignment, NumPy's rule)")


def _infer(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    dtype = same_dtype(ctx, x, y)
    shape = elementwise_broadcast(ctx, x.shape, y.shape, ctx.attr("axis"))
    # X is the "main" operand in Paddle: Out carries its LoD.
    ctx.set_output_like("Out", x, shape=shape, dtype=dtype)


def make_elementwise(op_type, formula):
    """The OpDef of one binary elementwise op computing ``formula``."""
    return OpDef(
        op_type,
        inputs=[In("X", "left operand", dtypes=NUMERIC),
                In("Y", "right operand, same dtype as X", dtypes=NUMERIC)],
        outputs=[Out("Out", f"{formula}; broadcast shape, dtype and LoD of X")],
        attrs=[Attr("axis", "int", -1, AXIS_DOC, check=at_least_minus_one)],
        infer=_infer,
        doc=f"Out = {formula}, elementwise. Shapes broadcast as in NumPy, except that with "
            "axis >= 0 the lower-rank operand's dims align with the other's starting at dim "
            "`axis` (Paddle's rule: X [N, C, H, W] + Y [C] at axis=1 adds per channel). "
            "X and Y must have the same dtype.",
    )


OPS = [make_elementwise(t, f) for t, f in FORMULAS.items()]
