"""layer_norm: each row of X (its dims from begin_norm_axis on) normalized to zero mean and
unit variance, then scaled and shifted per element of the row."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of, grad_name
from headrace.ops.shape import numel

from ._common import describe

FLOATS = ("float32", "float64")


def _split(ctx, x):
    axis = ctx.attr("begin_norm_axis")
    if not 1 <= axis <= x.rank - 1 and not (x.rank == 1 and axis == 0):
        ctx.fail(f"attribute 'begin_norm_axis' must leave {describe('X', x)} rows to "
                 f"normalize", expected=f"1 <= begin_norm_axis < {x.rank}",
                 found=f"begin_norm_axis = {axis}")
    return numel(x.shape[:axis]), numel(x.shape[axis:])


def _infer_layer_norm(ctx):
    x = ctx.input("X")
    left, right = _split(ctx, x)
    for slot in ("Scale", "Bias"):
        if ctx.has_input(slot):
            p = ctx.input(slot)
            if numel(p.shape) not in (right, -1) and right != -1:
                ctx.fail(f"{describe(slot, p)} must hold one value per element of a row",
                         expected=f"{right} values", found=f"shape {list(p.shape)}")
    ctx.set_output("Y", x.shape, x.dtype, x.lod_level)
    for slot in ("Mean", "Variance"):
        ctx.set_output(slot, (left,), x.dtype)


layer_norm = OpDef(
    "layer_norm",
    inputs=[In("X", "the input; rows are its dims from begin_norm_axis on", dtypes=FLOATS),
            In("Scale", "per-element scale of a row (gamma)", optional=True, dtypes=FLOATS),
            In("Bias", "per-element shift of a row (beta)", optional=True, dtypes=FLOATS)],
    outputs=[Out("Y", "the normalized X, X's shape"),
             Out("Mean", "each row's mean", intermediate=True),
             Out("Variance", "each row's (biased) variance", intermediate=True)],
    attrs=[Attr("epsilon", "float", 1e-5, "added to the variance",
                check=lambda v: None if v >= 0 else "must be >= 0"),
           Attr("begin_norm_axis", "int", 1, "the first dim of a row")],
    infer=_infer_layer_norm,
    doc="Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias over each row (the dims from "
        "begin_norm_axis on); Mean and Variance keep each row's statistics for the gradient.",
)


def _infer_layer_norm_grad(ctx):
    x = ctx.input("X")
    if ctx.has_output(grad_name("X")):
        ctx.set_output_like(grad_name("X"), x)
    for slot in ("Scale", "Bias"):
        if ctx.has_output(grad_name(slot)) and ctx.has_input(slot):
            ctx.set_output_like(grad_name(slot), ctx.input(slot))


# layer_norm_grad(X, Scale, Bias, Mean, Variance, Y@GRAD) -> X@GRAD, Scale@GRAD, Bias@GRAD
layer_norm_grad = grad_of(
    layer_norm, uses=["X", "Scale", "Bias", "Mean", "Variance"], grads=["X", "Scale", "Bias"],
    infer=_infer_layer_norm_grad,
    doc="Gradient of layer_norm, from the rows' kept Mean and Variance.")

OPS = [layer_norm, layer_norm_grad]
