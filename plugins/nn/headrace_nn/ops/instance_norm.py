"""instance_norm: each channel of each example normalized over its positions, then scaled and
shifted per channel (NCHW). SavedVariance holds the inverse standard deviation, as Paddle."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of, grad_name

from ._common import describe

FLOATS = ("float32", "float64")


def _infer_instance_norm(ctx):
    x = ctx.input("X")
    if x.rank < 3:
        ctx.fail(f"{describe('X', x)} must be [N, C, positions...]", expected="rank >= 3",
                 found=f"shape {list(x.shape)}")
    channels = x.shape[1]
    for slot in ("Scale", "Bias"):
        if ctx.has_input(slot):
            p = ctx.input(slot)
            if list(p.shape) not in ([channels], [-1]) and channels >= 0:
                ctx.fail(f"{describe(slot, p)} must hold one value per channel",
                         expected=f"[{channels}]", found=f"{list(p.shape)}")
    ctx.set_output_like("Y", x)
    n = x.shape[0] * channels if x.shape[0] >= 0 and channels >= 0 else -1
    for slot in ("SavedMean", "SavedVariance"):
        ctx.set_output(slot, (n,), x.dtype)


instance_norm = OpDef(
    "instance_norm",
    inputs=[In("X", "[N, C, positions...] (NCHW)", dtypes=FLOATS),
            In("Scale", "per-channel scale [C]", optional=True, dtypes=FLOATS),
            In("Bias", "per-channel shift [C]", optional=True, dtypes=FLOATS)],
    outputs=[Out("Y", "the normalized X"),
             Out("SavedMean", "[N * C] each instance's mean", intermediate=True),
             Out("SavedVariance", "[N * C] each instance's 1 / sqrt(var + epsilon)",
                 intermediate=True)],
    attrs=[Attr("epsilon", "float", 1e-5, "added to the variance",
                check=lambda v: None if v >= 0 else "must be >= 0")],
    infer=_infer_instance_norm,
    doc="Y = (X - mean) / sqrt(var + epsilon) * Scale[c] + Bias[c], the statistics over each "
        "example's channel (its positions).",
)


def _infer_instance_norm_grad(ctx):
    for slot in ("X", "Scale", "Bias"):
        if ctx.has_output(grad_name(slot)) and ctx.has_input(slot):
            ctx.set_output_like(grad_name(slot), ctx.input(slot))


instance_norm_grad = grad_of(
    instance_norm, uses=["X", "Scale", "Bias", "SavedMean", "SavedVariance"],
    grads=["X", "Scale", "Bias"], infer=_infer_instance_norm_grad,
    doc="Gradient of instance_norm, from the kept means and inverse standard deviations.")

OPS = [instance_norm, instance_norm_grad]
