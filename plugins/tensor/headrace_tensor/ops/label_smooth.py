"""label_smooth: one-hot labels mixed with a prior (Paddle's op, ``fluid.layers.label_smooth``).

Out = (1 - epsilon) * X + epsilon * PriorDist, the prior spread along X's last dim (the
classes); without PriorDist it is uniform, 1 / (number of classes). As in Paddle's kernel the
two coefficients are formed in float32 (epsilon is a float attribute) and then used in X's
type; the op does not check epsilon's range (the layer does: 0 <= epsilon <= 1). Out keeps
X's LoD. The gradient, label_smooth_grad, is (1 - epsilon) * Out@GRAD; PriorDist gets none,
as in Paddle.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import numel

from ._common import FLOAT_DTYPES

_FLOATS = tuple(d for d in FLOAT_DTYPES if d in ("float32", "float64"))


def _infer_label_smooth(ctx):
    x = ctx.input("X")
    if x.rank == 0:
        ctx.fail(f"input 'X' ({x.name}) must have a class dim", expected="rank >= 1",
                 found="shape []")
    if ctx.has_input("PriorDist"):
        prior = ctx.input("PriorDist")
        n, classes = numel(prior.shape), x.shape[-1]
        if n >= 0 and classes >= 0 and n != classes:
            ctx.fail(f"input 'PriorDist' ({prior.name}) must hold one value per class of X "
                     f"({x.name}, shape {list(x.shape)})", expected=f"{classes} elements",
                     found=f"shape {list(prior.shape)}")
        if prior.dtype is not None and x.dtype is not None and prior.dtype != x.dtype:
            ctx.fail(f"input 'PriorDist' ({prior.name}) must have the dtype of X ({x.name})",
                     expected=x.dtype, found=prior.dtype)
    ctx.set_output("Out", x.shape, x.dtype, x.lod_level)


label_smooth = OpDef(
    "label_smooth",
    inputs=[In("X", "labels, one-hot along the last dim", dtypes=_FLOATS),
            In("PriorDist", "the prior over the classes (as many elements as X's last dim); "
               "uniform when not given", optional=True, dtypes=_FLOATS)],
    outputs=[Out("Out", "the smoothed labels")],
    attrs=[Attr("epsilon", "float", 0.0, "the weight of the prior")],
    infer=_infer_label_smooth,
    doc="Out = (1 - epsilon) * X + epsilon * PriorDist (or epsilon / X.shape[-1]) along X's "
        "last dim. The gradient is label_smooth_grad.",
)


def _infer_label_smooth_grad(ctx):
    dout = ctx.input("Out@GRAD")
    ctx.set_output("X@GRAD", dout.shape, dout.dtype, dout.lod_level)


# label_smooth_grad(Out@GRAD) -> X@GRAD (Paddle's slots).
label_smooth_grad = grad_of(label_smooth, uses=[], grads=["X"], infer=_infer_label_smooth_grad,
                            doc="Gradient of label_smooth: X@GRAD = (1 - epsilon) * Out@GRAD.")

OPS = [label_smooth, label_smooth_grad]
