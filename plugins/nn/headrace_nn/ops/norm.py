"""norm (Fluid's l2_normalize): X divided by its L2 norm along an axis."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import describe

FLOATS = ("float32", "float64")


def _infer_norm(ctx):
    x = ctx.input("X")
    axis = ctx.attr("axis")
    if not -x.rank <= axis < x.rank:
        ctx.fail(f"attribute 'axis' must name a dim of {describe('X', x)}",
                 expected=f"{-x.rank} <= axis < {x.rank}", found=f"axis = {axis}")
    axis = axis + x.rank if axis < 0 else axis
    ctx.set_output_like("Out", x)
    shape = list(x.shape)
    shape[axis] = 1
    ctx.set_output("Norm", shape, x.dtype)


norm = OpDef(
    "norm",
    inputs=[In("X", "the tensor to normalize", dtypes=FLOATS)],
    outputs=[Out("Out", "X / sqrt(sum(X^2, axis) + epsilon), X's shape"),
             Out("Norm", "sqrt(sum(X^2, axis) + epsilon), axis kept as 1", intermediate=True)],
    attrs=[Attr("axis", "int", 1, "the axis to normalize along (negative: from the end)"),
           Attr("epsilon", "float", 1e-10, "added under the square root"),
           Attr("is_test", "bool", False, "inference mode (Norm need not be kept)")],
    infer=_infer_norm,
    doc="Out = X / Norm, Norm = sqrt(sum over axis of X^2 + epsilon).",
)

# norm_grad(X, Norm, Out@GRAD) -> X@GRAD = (dOut - Out * sum(dOut * Out, axis)) / Norm.
norm_grad = grad_of(norm, uses=["X", "Norm"], grads=["X"],
                    doc="Gradient of norm: (Out@GRAD - Out * sum(Out@GRAD * Out, axis)) / Norm.")

OPS = [norm, norm_grad]
