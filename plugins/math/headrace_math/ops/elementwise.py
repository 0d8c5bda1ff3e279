"""Binary elementwise arithmetic with Paddle's broadcasting: elementwise_add, _sub, _mul, _div,
_max, _min, _pow. One factory makes all seven; they differ only in name and formula.

Each has a grad op ``<op>_grad`` (from ``grad_of``) writing X@GRAD and Y@GRAD; the gradient of
an operand that was broadcast is summed over the dims it was broadcast along, so it has that
operand's shape (Paddle's axis alignment included). What each grad op reads (GRAD_USES):
add and sub read X and Y for their shapes only (either side may be the broadcast one, so both
shapes are needed; Paddle declares them no-need-buffer); mul, max, min and pow read X and Y;
div reads X (shape only), Y and Out (Y@GRAD = -Out@GRAD * Out / Y).

max/min route the gradient as Paddle does: X@GRAD gets Out@GRAD where X > Y (max) or X < Y
(min), Y@GRAD everywhere else, so ties (and a NaN X) send it to Y.
pow: X@GRAD = Out@GRAD * Y * X**(Y-1), Y@GRAD = Out@GRAD * Out * ln X, taken as 0 where X == 0
(0**Y does not change with Y > 0).
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dims_match, elementwise_broadcast

from ._common import NUMERIC, at_least_minus_one, label, same_dtype

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


# op type -> the forward slots its grad op reads.
GRAD_USES = {
    "elementwise_add": ["X", "Y"],
    "elementwise_sub": ["X", "Y"],
    "elementwise_mul": ["X", "Y"],
    "elementwise_div": ["X", "Y", "Out"],
    "elementwise_max": ["X", "Y"],
    "elementwise_min": ["X", "Y"],
    "elementwise_pow": ["X", "Y"],
}


def expect_like(ctx, slot, shape, dtype):
    """Fail unless input ``slot`` has ``shape`` (unknown dims pass) and ``dtype``."""
    m = ctx.input(slot)
    if not dims_match(m.shape, shape):
        ctx.fail(f"{label(m, slot)} must have the shape of the forward Out",
                 expected=f"shape {list(shape)}", found=f"shape {list(m.shape)}")
    if m.dtype is not None and dtype is not None and m.dtype != dtype:
        ctx.fail(f"{label(m, slot)} is {m.dtype} but X is {dtype}", expected=dtype,
                 found=m.dtype)


def _infer_grad(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    dtype = same_dtype(ctx, x, y)
    shape = elementwise_broadcast(ctx, x.shape, y.shape, ctx.attr("axis"))
    expect_like(ctx, "Out@GRAD", shape, dtype)
    if ctx.has_input("Out"):
        expect_like(ctx, "Out", shape, dtype)
    ctx.set_output_like("X@GRAD", x)
    ctx.set_output_like("Y@GRAD", y)


def make_elementwise_grad(fwd):
    """``<op>_grad`` of one elementwise op: (X, Y[, Out], Out@GRAD) -> (X@GRAD, Y@GRAD)."""
    reads = GRAD_USES[fwd.type]
    return grad_of(fwd, uses=reads, infer=_infer_grad,
                   doc=f"Gradient of {fwd.type}: reads {', '.join(reads)} and Out@GRAD; the "
                       "gradient of a broadcast operand is summed over its broadcast dims.")


FORWARD = [make_elementwise(t, f) for t, f in FORMULAS.items()]
OPS = FORWARD + [make_elementwise_grad(d) for d in FORWARD]
