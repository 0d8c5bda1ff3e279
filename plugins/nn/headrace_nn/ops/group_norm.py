"""group_norm: each group of channels of each example normalized to zero mean and unit
variance, then scaled and shifted per channel (NCHW)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of, grad_name

from ._common import describe

FLOATS = ("float32", "float64")


def _infer_group_norm(ctx):
    x = ctx.input("X")
    groups = ctx.attr("groups")
    if x.rank < 2:
        ctx.fail(f"{describe('X', x)} must be [N, C, ...]", expected="rank >= 2",
                 found=f"shape {list(x.shape)}")
    channels = x.shape[1]
    if groups < 1 or (channels > 0 and channels % groups):
        ctx.fail(f"attribute 'groups' must divide the {channels} channels of "
                 f"{describe('X', x)}", expected="a divisor of C", found=f"groups = {groups}")
    for slot in ("Scale", "Bias"):
        if ctx.has_input(slot):
            p = ctx.input(slot)
            if list(p.shape) not in ([channels], [-1]) and channels >= 0:
                ctx.fail(f"{describe(slot, p)} must hold one value per channel",
                         expected=f"[{channels}]", found=f"{list(p.shape)}")
    ctx.set_output_like("Y", x)
    for slot in ("Mean", "Variance"):
        ctx.set_output(slot, (x.shape[0], groups), x.dtype)


group_norm = OpDef(
    "group_norm",
    inputs=[In("X", "[N, C, ...] (NCHW)", dtypes=FLOATS),
            In("Scale", "per-channel scale [C]", optional=True, dtypes=FLOATS),
            In("Bias", "per-channel shift [C]", optional=True, dtypes=FLOATS)],
    outputs=[Out("Y", "the normalized X"),
             Out("Mean", "[N, groups] each group's mean", intermediate=True),
             Out("Variance", "[N, groups] each group's variance", intermediate=True)],
    attrs=[Attr("epsilon", "float", 1e-5, "added to the variance",
                check=lambda v: None if v >= 0 else "must be >= 0"),
           Attr("groups", "int", doc="how many groups the channels form"),
           Attr("data_layout", "string", "NCHW", "the layout (NCHW only)", choices=("NCHW",))],
    infer=_infer_group_norm,
    doc="Y = (X - mean_g) / sqrt(var_g + epsilon) * Scale[c] + Bias[c], the statistics over "
        "each example's group of C / groups channels (and all their positions).",
)


def _infer_group_norm_grad(ctx):
    for slot in ("X", "Scale", "Bias"):
        if ctx.has_output(grad_name(slot)) and ctx.has_input(slot):
            ctx.set_output_like(grad_name(slot), ctx.input(slot))


# group_norm_grad(X, Scale, Bias, Mean, Variance, Y@GRAD) -> X@GRAD, Scale@GRAD, Bias@GRAD
group_norm_grad = grad_of(group_norm, uses=["X", "Scale", "Bias", "Mean", "Variance"],
                          grads=["X", "Scale", "Bias"], infer=_infer_group_norm_grad,
                          doc="Gradient of group_norm, from the groups' kept statistics.")

OPS = [group_norm, group_norm_grad]
