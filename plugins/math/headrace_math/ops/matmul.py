"""Matrix products: mul (flatten both operands to 2-D, then a GEMM), matmul and matmul_v2
(NumPy matmul: 1-D operands, broadcast batch dims, optional transposes).

Their grad ops read X, Y and Out@GRAD and write X@GRAD, Y@GRAD (each only when wanted):
mul: X@GRAD = Out@GRAD @ Y^T and Y@GRAD = X^T @ Out@GRAD on the flattened 2-D views;
matmul: the same products with the transposes and alpha folded in, and the gradient of an
operand whose batch dims were broadcast summed over those dims.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import broadcast_shapes, dim_eq, dims_match, numel

from ._common import FLOATS, at_least, label, same_dtype

# -- mul ------------------------------------------------------------------------------------


def _infer_mul(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    xn, yn = ctx.attr("x_num_col_dims"), ctx.attr("y_num_col_dims")
    for meta, slot, n, attr in ((x, "X", xn, "x_num_col_dims"), (y, "Y", yn, "y_num_col_dims")):
        # Both 2-D views need a non-empty column part, so the rank must exceed the split point.
        if len(meta.shape) <= n:
            ctx.fail(f"{label(meta, slot)} of rank {meta.rank} cannot be flattened at "
                     f"{attr}={n}", expected=f"{slot} of rank > {n}",
                     found=f"rank {meta.rank}, shape {list(meta.shape)}")
    width, height = numel(x.shape[xn:]), numel(y.shape[:yn])
    if not dim_eq(width, height):
        ctx.fail(f"{label(x, 'X')}'s flattened width {width} != {label(y, 'Y')}'s flattened "
                 f"height {height}",
                 expected=f"prod(X.dims[{xn}:]) == prod(Y.dims[:{yn}])",
                 found=f"X{list(x.shape)} -> [{numel(x.shape[:xn])}, {width}], "
                       f"Y{list(y.shape)} -> [{height}, {numel(y.shape[yn:])}]")
    ctx.set_output_like("Out", x, shape=tuple(x.shape[:xn]) + tuple(y.shape[yn:]),
                        dtype=same_dtype(ctx, x, y))


mul = OpDef(
    "mul",
    inputs=[In("X", "left operand, viewed as a matrix split at x_num_col_dims", dtypes=FLOATS),
            In("Y", "right operand, viewed as a matrix split at y_num_col_dims", dtypes=FLOATS)],
    outputs=[Out("Out", "X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:]; LoD of X")],
    attrs=[
        Attr("x_num_col_dims", "int", 1, "X's leading dims that form the matrix rows",
             check=at_least(1)),
        Attr("y_num_col_dims", "int", 1, "Y's leading dims that form the matrix rows",
             check=at_least(1)),
    ],
    infer=_infer_mul,
    doc="Matrix product of flattened operands (the fc layer's product). X is viewed as a "
        "[prod(X.dims[:x_num_col_dims]), prod(X.dims[x_num_col_dims:])] matrix and Y as "
        "[prod(Y.dims[:y_num_col_dims]), prod(Y.dims[y_num_col_dims:])]; the inner sizes "
        "must agree. Out = X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:].",
)

# -- matmul / matmul_v2 -----------------------------------------------------------------------


def _matmul_shape(ctx, x, y, trans_x, trans_y, tx_name, ty_name):
    """NumPy matmul's output shape with optional transposes of the last two dims."""
    for meta, slot in ((x, "X"), (y, "Y")):
        if meta.rank == 0:
            ctx.fail(f"{label(meta, slot)} is a 0-D tensor; matmul needs vectors or matrices",
                     expected=f"{slot} of rank >= 1", found="rank 0, shape []")
    xs, ys = list(x.shape), list(y.shape)
    # A 1-D operand is a row (X) or column (Y) vector whose added dim is dropped again, as in
    # NumPy and matmul_v2; transposing a vector means nothing, so the flag is ignored.
    x_vec, y_vec = len(xs) == 1, len(ys) == 1
    if x_vec:
        xs = [1] + xs
    if y_vec:
        ys = ys + [1]
    m, kx = (xs[-1], xs[-2]) if trans_x and not x_vec else (xs[-2], xs[-1])
    ky, n = (ys[-1], ys[-2]) if trans_y and not y_vec else (ys[-2], ys[-1])
    if not dim_eq(kx, ky):
        ctx.fail(f"{label(x, 'X')}'s contraction dim {kx} != {label(y, 'Y')}'s contraction dim "
                 f"{ky}", expected="X's last dim (second-to-last if transposed) == Y's "
                 "second-to-last dim (last if transposed)",
                 found=f"X{list(x.shape)} {tx_name}={trans_x}, "
                       f"Y{list(y.shape)} {ty_name}={trans_y}")
    batch = broadcast_shapes(ctx, xs[:-2], ys[:-2], f"X ({x.name}) batch dims",
                             f"Y ({y.name}) batch dims")
    out = batch + ([] if x_vec else [m]) + ([] if y_vec else [n])
    # vector . vector is 0-D, as in NumPy and Paddle 3 (the Fluid op set wrote [1]).
    return out


def _matmul_infer(tx_attr, ty_attr):
    def infer(ctx):
        x, y = ctx.input("X"), ctx.input("Y")
        dtype = same_dtype(ctx, x, y)
        shape = _matmul_shape(ctx, x, y, ctx.attr(tx_attr), ctx.attr(ty_attr), tx_attr, ty_attr)
        ctx.set_output_like("Out", x, shape=shape, dtype=dtype)
    return infer


_MATMUL_DOC = ("NumPy matmul of X and Y: the last two dims multiply as matrices (after the "
               "optional transposes), leading batch dims broadcast; a 1-D X is a row vector "
               "and a 1-D Y a column vector whose extra dim is dropped from Out (the "
               "transpose flag of a 1-D operand is ignored); vector . vector gives a 0-D Out.")

matmul = OpDef(
    "matmul",
    inputs=[In("X", "left operand, rank >= 1", dtypes=FLOATS),
            In("Y", "right operand, rank >= 1", dtypes=FLOATS)],
    outputs=[Out("Out", "alpha * op(X) @ op(Y); LoD of X")],
    attrs=[
        Attr("transpose_X", "bool", False, "swap X's last two dims first"),
        Attr("transpose_Y", "bool", False, "swap Y's last two dims first"),
        Attr("alpha", "float", 1.0, "scale applied to the product"),
    ],
    infer=_matmul_infer("transpose_X", "transpose_Y"),
    doc="Out = alpha * op(X) @ op(Y). " + _MATMUL_DOC + " Paddle's matmul required equal "
        "batch sizes; broadcasting them is a superset of that.",
)

matmul_v2 = OpDef(
    "matmul_v2",
    inputs=[In("X", "left operand, rank >= 1", dtypes=FLOATS),
            In("Y", "right operand, rank >= 1", dtypes=FLOATS)],
    outputs=[Out("Out", "op(X) @ op(Y); LoD of X")],
    attrs=[
        Attr("trans_x", "bool", False, "swap X's last two dims first"),
        Attr("trans_y", "bool", False, "swap Y's last two dims first"),
    ],
    infer=_matmul_infer("trans_x", "trans_y"),
    doc="Out = op(X) @ op(Y) (Paddle 2.x's matmul, no alpha). " + _MATMUL_DOC,
)

# -- gradients --------------------------------------------------------------------------------


def _expect_out_grad(ctx, shape, dtype):
    d = ctx.input("Out@GRAD")
    # A 0-D Out's gradient may come as one element of another rank ([1] in Fluid).
    scalar = not shape and all(dim_eq(k, 1) for k in d.shape)
    if not scalar and not dims_match(d.shape, shape):
        ctx.fail(f"{label(d, 'Out@GRAD')} must have the shape of the forward Out",
                 expected=f"shape {list(shape)}", found=f"shape {list(d.shape)}")
    if d.dtype is not None and dtype is not None and d.dtype != dtype:
        ctx.fail(f"{label(d, 'Out@GRAD')} is {d.dtype} but X is {dtype}", expected=dtype,
                 found=d.dtype)


def _infer_mul_grad(ctx):
    # The forward rule checks X and Y and gives Out's shape; Out@GRAD must have it.
    fwd = _Probe(ctx)
    _infer_mul(fwd)
    _expect_out_grad(ctx, fwd.out_shape, fwd.out_dtype)
    ctx.set_output_like("X@GRAD", ctx.input("X"))
    ctx.set_output_like("Y@GRAD", ctx.input("Y"))


def _matmul_grad_infer(tx_attr, ty_attr):
    forward = _matmul_infer(tx_attr, ty_attr)

    def infer(ctx):
        fwd = _Probe(ctx)
        forward(fwd)
        _expect_out_grad(ctx, fwd.out_shape, fwd.out_dtype)
        ctx.set_output_like("X@GRAD", ctx.input("X"))
        ctx.set_output_like("Y@GRAD", ctx.input("Y"))
    return infer


class _Probe:
    """The grad op's context seen as the forward op's: inputs, attributes and failures go to
    ``ctx``; the forward rule's Out is caught here instead of being set."""

    def __init__(self, ctx):
        self._ctx = ctx
        self.out_shape = self.out_dtype = None
        # What the forward rules call, bound here: __getattr__ is the slow path (a failed
        # lookup first), taken by anything else.
        self.input, self.attr, self.fail = ctx.input, ctx.attr, ctx.fail

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def set_output_like(self, slot, meta, shape=None, dtype=None, index=0):
        self.out_shape = tuple(meta.shape if shape is None else shape)
        self.out_dtype = meta.dtype if dtype is None else dtype


mul_grad = grad_of(
    mul, uses=["X", "Y"], infer=_infer_mul_grad,
    doc="Gradient of mul on the flattened views X [M, K], Y [K, N], Out@GRAD [M, N]: "
        "X@GRAD = Out@GRAD @ Y^T, Y@GRAD = X^T @ Out@GRAD, in the shapes of X and Y.")
matmul_grad = grad_of(
    matmul, uses=["X", "Y"], infer=_matmul_grad_infer("transpose_X", "transpose_Y"),
    doc="Gradient of matmul: X@GRAD and Y@GRAD from Out@GRAD with the transposes and alpha "
        "applied, summed over the batch dims an operand was broadcast along; a 1-D operand's "
        "gradient is 1-D.")
matmul_v2_grad = grad_of(
    matmul_v2, uses=["X", "Y"], infer=_matmul_grad_infer("trans_x", "trans_y"),
    doc="Gradient of matmul_v2: X@GRAD and Y@GRAD from Out@GRAD with the transposes applied, "
        "summed over the batch dims an operand was broadcast along; a 1-D operand's gradient "
        "is 1-D.")

OPS = [mul, matmul, matmul_v2, mul_grad, matmul_grad, matmul_v2_grad]
