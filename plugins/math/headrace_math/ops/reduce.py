"""Reductions: mean (of everything, a 0-D Out) and reduce_sum/_mean/_max/_min/_prod over
chosen dims, plus the logical reduce_all/reduce_any over bool tensors.

Shapes are Paddle 3's: a reduction that leaves no dim (mean, reduce_all, every dim without
keep_dim) gives a 0-D Out, shape []. Fluid programs declare [1] for those; the kernels give []
(the same one number) and their grad ops take a one-element Out@GRAD of either shape.

Grad ops (X@GRAD has X's shape): mean_grad and reduce_sum/_mean_grad read X for its shape
only and spread Out@GRAD (divided by the count for the means) over the reduced dims;
reduce_max/_min_grad read X and Out and give Out@GRAD to every position equal to the result
(ties all receive it, as in Paddle); reduce_prod_grad reads X and gives each position
Out@GRAD times the product of the others, computed without dividing, so zeros are exact.
"""
from headrace import dtypes
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dim_eq

from ._common import BOOL, FLOATS, NUMERIC, dtype_code

# -- mean -------------------------------------------------------------------------------------


def _infer_mean(ctx):
    x = ctx.input("X")
    # Paddle 3's shape (Fluid wrote [1]); append_backward seeds a loss of either shape.
    ctx.set_output("Out", [], x.dtype)


mean = OpDef(
    "mean",
    inputs=[In("X", "input tensor", dtypes=FLOATS)],
    outputs=[Out("Out", "0-D, the mean of all elements")],
    infer=_infer_mean,
    doc="Out = mean of all elements of X, a 0-D tensor (shape []); the usual end of a loss.",
)

# -- reduce_* ---------------------------------------------------------------------------------


def reduced_dims(ctx, x):
    """The sorted, non-negative dims to reduce, or None for all of them."""
    dims = ctx.attr("dim")
    # Paddle 2 writes dim=[] for "everything"; a 0-D X can only be reduced whole.
    if ctx.attr("reduce_all") or not dims or x.rank == 0:
        return None
    seen = {}
    for d in dims:
        if not -x.rank <= d < x.rank:
            ctx.fail(f"attribute 'dim' entry {d} is out of range for X ({x.name}) of rank "
                     f"{x.rank}", expected=f"dims in [{-x.rank}, {x.rank - 1}]",
                     found=f"dim={list(dims)}, X{list(x.shape)}")
        nd = d % x.rank
        if nd in seen:
            ctx.fail(f"attribute 'dim' names dimension {nd} of X ({x.name}) twice "
                     f"(as {seen[nd]} and {d})", expected="distinct dims",
                     found=f"dim={list(dims)} for rank {x.rank}")
        seen[nd] = d
    return sorted(seen)


def reduced_shape(x, dims, keep_dim):
    """X's shape with ``dims`` (None: all) reduced: set to 1 (keep_dim) or dropped; a result
    without dims is 0-D (Paddle 3; Fluid wrote [1])."""
    gone = set(range(x.rank)) if dims is None else set(dims)
    return [1 if i in gone else d for i, d in enumerate(x.shape)
            if keep_dim or i not in gone]


def _reduce_infer(bool_out):
    def infer(ctx):
        x = ctx.input("X")
        dims = reduced_dims(ctx, x)
        shape = reduced_shape(x, dims, ctx.attr("keep_dim"))
        if bool_out:
            dtype = "bool"
        else:
            code = ctx.attr("out_dtype")
            dtype = x.dtype if code == -1 else dtypes.from_proto(code)
        # Rows (dim 0) survive only if dim 0 is not reduced; only then does the LoD still apply.
        lod = x.lod_level if dims is not None and 0 not in dims else 0
        ctx.set_output("Out", shape, dtype, lod_level=lod)
    return infer


def _common_attrs():
    return [
        Attr("dim", "ints", [0], "dims to reduce; negative counts from the end; [] means all"),
        Attr("keep_dim", "bool", False, "keep reduced dims as size 1"),
        Attr("reduce_all", "bool", False, "reduce every dim (dim is ignored)"),
    ]


# op type -> (what it computes, dtypes of X)
REDUCTIONS = {
    "reduce_sum": ("sum", NUMERIC + BOOL),
    "reduce_mean": ("mean", NUMERIC),
    "reduce_max": ("maximum", NUMERIC),
    "reduce_min": ("minimum", NUMERIC),
    "reduce_prod": ("product", NUMERIC),
}

_SHAPE_DOC = ("Reduced dims are dropped, or kept as 1 with keep_dim; reducing every dim "
              "without keep_dim gives a 0-D Out (Paddle 3). dim entries may be negative and "
              "must be distinct.")


def make_reduce(op_type, what, x_dtypes):
    """The OpDef of a numeric reduction computing ``what`` over ``dim``."""
    return OpDef(
        op_type,
        inputs=[In("X", "input tensor", dtypes=x_dtypes)],
        outputs=[Out("Out", f"the {what} over the reduced dims")],
        attrs=_common_attrs() + [
            Attr("in_dtype", "int", -1, "cast X to this VarType code first (-1: no cast)",
                 check=dtype_code),
            Attr("out_dtype", "int", -1, "Out's VarType code (-1: X's dtype)",
                 check=dtype_code),
        ],
        infer=_reduce_infer(bool_out=False),
        doc=f"Out = the {what} of X over the dims in `dim` (all dims if reduce_all). "
            + _SHAPE_DOC + " Out has X's dtype unless out_dtype is set (Paddle 2).",
    )


def make_logical_reduce(op_type, what):
    """The OpDef of a bool reduction (no gradient)."""
    return OpDef(
        op_type,
        inputs=[In("X", "bool tensor", dtypes=BOOL)],
        outputs=[Out("Out", f"bool, {what} over the reduced dims")],
        attrs=_common_attrs(),
        infer=_reduce_infer(bool_out=True),
        differentiable=False,
        doc=f"Out = {what} over the dims in `dim` of a bool X. " + _SHAPE_DOC,
    )


# -- gradients --------------------------------------------------------------------------------


def _expect_reduced(ctx, slot, shape):
    m = ctx.input(slot)
    # A 0-D Out also comes as one element of another rank ([1] in Fluid programs).
    scalar = not shape and all(dim_eq(d, 1) for d in m.shape)
    if not scalar and (len(m.shape) != len(shape)
                       or not all(dim_eq(a, b) for a, b in zip(m.shape, shape))):
        ctx.fail(f"input '{slot}' ({m.name}) must have the shape of the forward Out",
                 expected=f"shape {list(shape)}", found=f"shape {list(m.shape)}")
    if m.dtype is not None and m.dtype not in ("float32", "float64"):
        ctx.fail(f"input '{slot}' ({m.name}) must be a float tensor",
                 expected="float32 or float64", found=m.dtype)


def _infer_mean_grad(ctx):
    _expect_reduced(ctx, "Out@GRAD", [])
    ctx.set_output_like("X@GRAD", ctx.input("X"))


def _infer_reduce_grad(ctx):
    x = ctx.input("X")
    shape = reduced_shape(x, reduced_dims(ctx, x), ctx.attr("keep_dim"))
    _expect_reduced(ctx, "Out@GRAD", shape)
    if ctx.has_input("Out"):
        _expect_reduced(ctx, "Out", shape)
    ctx.set_output_like("X@GRAD", x)


# op type -> (forward slots its grad op reads, what X@GRAD holds)
REDUCE_GRADS = {
    "reduce_sum": (["X"], "Out@GRAD broadcast over the reduced dims"),
    "reduce_mean": (["X"], "Out@GRAD / (number of reduced elements), broadcast over the "
                           "reduced dims"),
    "reduce_max": (["X", "Out"], "Out@GRAD where X equals Out (every tie), else 0"),
    "reduce_min": (["X", "Out"], "Out@GRAD where X equals Out (every tie), else 0"),
    "reduce_prod": (["X"], "Out@GRAD times the product of the other reduced elements "
                           "(no division: exact with zeros)"),
}

FORWARD = ([mean] + [make_reduce(t, w, d) for t, (w, d) in REDUCTIONS.items()]
           + [make_logical_reduce("reduce_all", "whether all elements are true"),
              make_logical_reduce("reduce_any", "whether any element is true")])

mean_grad = grad_of(
    mean, uses=["X"], infer=_infer_mean_grad,
    doc="Gradient of mean: X@GRAD = Out@GRAD / numel(X) everywhere; X is read for its shape.")

OPS = FORWARD + [mean_grad] + [
    grad_of(d, uses=REDUCE_GRADS[d.type][0], infer=_infer_reduce_grad,
            doc=f"Gradient of {d.type}: X@GRAD (X's shape) = {REDUCE_GRADS[d.type][1]}.")
    for d in FORWARD if d.type in REDUCE_GRADS]
