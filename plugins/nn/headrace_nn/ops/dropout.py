"""dropout: zero random elements while training."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name
from headrace.ops.shape import numel

from ._common import FLOATS, describe, expect_same_shape, in_range


def _infer_dropout(ctx):
    x = ctx.input("X")
    if ctx.has_input("Seed"):
        seed = ctx.input("Seed")
        if numel(seed.shape) not in (1, -1):
            ctx.fail(f"{describe('Seed', seed)} must hold one value",
                     expected="shape [1]", found=f"Seed{list(seed.shape)}")
    ctx.set_output("Out", x.shape, x.dtype, x.lod_level)
    ctx.set_output("Mask", x.shape, "uint8")


dropout = OpDef(
    "dropout",
    inputs=[In("X", "input tensor", dtypes=FLOATS),
            In("Seed", "int32 [1]: the seed for this run, above fix_seed/seed", optional=True,
               dtypes=("int32",))],
    outputs=[Out("Out", "X with dropped elements zeroed: X's shape, dtype and LoD"),
             Out("Mask", "uint8, X's shape: 1 where the element was kept; read by the gradient",
                 intermediate=True, dtypes=("uint8",))],
    attrs=[
        Attr("dropout_prob", "float", 0.5, "probability of dropping an element",
             check=in_range(0.0, 1.0)),
        Attr("is_test", "bool", False, "inference: no randomness (see dropout_implementation)"),
        Attr("seed", "int", 0, "random seed: with fix_seed every run drops the same "
             "elements, without it runs draw a reproducible sequence of masks; 0: the "
             "program's random_seed, written here when the op is built, or unseeded"),
        Attr("fix_seed", "bool", False, "use `seed` so that every run drops the same elements"),
        Attr("dropout_implementation", "string", "downgrade_in_infer",
             "downgrade_in_infer: train X*mask, test X*(1-p); "
             "upscale_in_train: train X*mask/(1-p), test X",
             choices=("downgrade_in_infer", "upscale_in_train")),
    ],
    infer=_infer_dropout,
    seed_attr="seed",
    doc="Training: Mask ~ Bernoulli(1 - dropout_prob), Out = X * Mask "
        "(upscale_in_train: / (1 - dropout_prob); 0 when dropout_prob = 1). Test: "
        "downgrade_in_infer gives X * (1 - dropout_prob), upscale_in_train gives X. "
        "The gradient reads Mask.",
)



def _infer_dropout_grad(ctx):
    mask, dout = ctx.input("Mask"), ctx.input("Out@GRAD")
    if mask.dtype != "uint8":
        ctx.fail(f"{describe('Mask', mask)} must be the forward's uint8 mask",
                 expected="uint8", found=mask.dtype)
    expect_same_shape(ctx, dout, mask, "Out@GRAD", "Mask")
    ctx.set_output_like("X@GRAD", dout)


# dropout_grad(Out@GRAD, Mask) -> X@GRAD (Paddle's slots; the int32 Seed gets no gradient).
# Written by hand rather than with grad_of, which puts the read forward slots first: the
# executor picks the kernel by the dtype of the first bound input, and Mask is uint8.
dropout_grad = OpDef(
    "dropout_grad",
    inputs=[In("Out@GRAD", "gradient of Out"),
            In("Mask", "the forward's uint8 mask: 1 where the element was kept")],
    outputs=[Out("X@GRAD", "gradient of X", optional=True)],
    attrs=list(dropout.attrs.values()),
    infer=_infer_dropout_grad,
    differentiable=False,
    doc="Gradient of dropout: training X@GRAD = Out@GRAD * Mask (/ (1 - dropout_prob) for "
        "upscale_in_train, 0 when dropout_prob = 1); is_test: Out@GRAD * (1 - dropout_prob) "
        "(downgrade_in_infer) or Out@GRAD (upscale_in_train). Reads Mask.",
)


def _dropout_grad(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("dropout_grad",
                   {"Out@GRAD": ctx.output_grad("Out"), "Mask": ctx.output("Mask")},
                   {grad_name("X"): ctx.input_grad("X")}, dict(ctx.attrs))]


dropout.grad = _dropout_grad

OPS = [dropout, dropout_grad]
