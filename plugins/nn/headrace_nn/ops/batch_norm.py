"""batch_norm: per-channel normalization with running statistics."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name
from headrace.ops.shape import dim_eq, merge_dim

from ._common import FLOATS, describe, expect_same_shape, in_range

PARAM_DTYPES = ("float32", "float64")
_STATS = ("Scale", "Bias", "Mean", "Variance")


def _same_var(ctx, in_slot, out_slot):
    """MeanOut/VarianceOut update the running statistics in place (as Paddle enforces)."""
    # InferContext has no public accessor for output names yet; both contexts implement this.
    outs = ctx.output_names(out_slot)
    name = ctx.input(in_slot).name
    if outs and outs[0] != name:
        ctx.fail(f"output '{out_slot}' must be the variable of input '{in_slot}' (the running "
                 f"statistic is updated in place)", expected=name, found=outs[0])


def _infer_batch_norm(ctx):
    x = ctx.input("X")
    if not 2 <= x.rank <= 5:
        ctx.fail(f"{describe('X', x)} must be 2-D to 5-D with a channel axis",
                 expected="rank 2 to 5", found=f"rank {x.rank}, shape {list(x.shape)}")
    c_axis = x.rank - 1 if ctx.attr("data_layout") == "NHWC" else 1
    channels = x.shape[c_axis]
    # float16 X keeps float32 statistics; float64 X needs float64 ones (Paddle's rule).
    param_dtype = "float64" if x.dtype == "float64" else "float32"
    for slot in _STATS:
        meta = ctx.input(slot)
        if meta.dtype != param_dtype:
            ctx.fail(f"{describe(slot, meta)} must be {param_dtype} for {x.dtype} X",
                     expected=param_dtype, found=meta.dtype)
        if meta.rank != 1 or not dim_eq(meta.shape[0], channels):
            ctx.fail(f"{describe(slot, meta)} must hold one value per channel of "
                     f"{describe('X', x)} ({ctx.attr('data_layout')}, channel axis {c_axis})",
                     expected=f"shape [{channels}]", found=f"{slot}{list(meta.shape)}")
        channels = merge_dim(channels, meta.shape[0])
    if ctx.has_input("MomentumTensor"):
        mom = ctx.input("MomentumTensor")
        if mom.rank != 1 or not dim_eq(mom.shape[0], 1):
            ctx.fail(f"{describe('MomentumTensor', mom)} must hold one value",
                     expected="shape [1]", found=f"MomentumTensor{list(mom.shape)}")
    _same_var(ctx, "Mean", "MeanOut")
    _same_var(ctx, "Variance", "VarianceOut")
    ctx.set_output("Y", x.shape, x.dtype, x.lod_level)
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        ctx.set_output(slot, [channels], param_dtype)
    ctx.set_output("ReserveSpace", [0], x.dtype)


batch_norm = OpDef(
    "batch_norm",
    inputs=[In("X", "input [N, C, ...] (NHWC: [N, ..., C]), 2-D to 5-D", dtypes=FLOATS),
            In("Scale", "gamma [C]", dtypes=PARAM_DTYPES),
            In("Bias", "beta [C]", dtypes=PARAM_DTYPES),
            In("Mean", "running mean [C]", dtypes=PARAM_DTYPES),
            In("Variance", "running variance [C]", dtypes=PARAM_DTYPES),
            In("MomentumTensor", "float32 [1]; overrides the momentum attribute",
               optional=True, dtypes=("float32",))],
    outputs=[Out("Y", "normalized X: shape, dtype and LoD of X"),
             Out("MeanOut", "the Mean variable, updated in place"),
             Out("VarianceOut", "the Variance variable, updated in place"),
             Out("SavedMean", "batch mean [C] (training) for the gradient", intermediate=True),
             Out("SavedVariance", "1/sqrt(batch var + epsilon) [C] for the gradient",
                 intermediate=True),
             Out("ReserveSpace", "Paddle's cuDNN workspace; headrace leaves it empty [0]",
                 optional=True, intermediate=True)],
    attrs=[
        Attr("is_test", "bool", False, "use the running statistics, do not update them"),
        Attr("momentum", "float", 0.9, "running = running*momentum + batch*(1-momentum)",
             check=in_range(0.0, 1.0)),
        Attr("epsilon", "float", 1e-5, "added to the variance", check=in_range(0.0, 1e-3)),
        Attr("data_layout", "string", "NCHW", "where the channel axis is",
             choices=("NCHW", "NHWC")),
        Attr("use_global_stats", "bool", False, "normalize with the running statistics even "
             "when training (they are not updated)"),
        Attr("trainable_statistics", "bool", False, "with is_test: still use batch statistics"),
    ],
    infer=_infer_batch_norm,
    doc="Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias per channel. Training (is_test "
        "false, or trainable_statistics): mean/var of the batch, saved in SavedMean and "
        "SavedVariance (as 1/sqrt(var+eps)), running statistics updated by momentum. "
        "Test or use_global_stats: Mean/Variance are used. The gradient reads X, Scale, Bias, "
        "SavedMean and SavedVariance.",
)



def _global_stats(attrs):
    """Does the op normalize with the running statistics (the forward kernel's rule)?"""
    test_mode = attrs.get("is_test", False) and not attrs.get("trainable_statistics", False)
    return bool(test_mode or attrs.get("use_global_stats", False))


def _infer_batch_norm_grad(ctx):
    x, dy = ctx.input("X"), ctx.input("Y@GRAD")
    if not 2 <= x.rank <= 5:
        ctx.fail(f"{describe('X', x)} must be 2-D to 5-D with a channel axis",
                 expected="rank 2 to 5", found=f"rank {x.rank}, shape {list(x.shape)}")
    expect_same_shape(ctx, x, dy, "X", "Y@GRAD")
    channels = x.shape[x.rank - 1 if ctx.attr("data_layout") == "NHWC" else 1]
    for slot in ("Scale", "Bias", "Mean", "Variance", "SavedMean", "SavedVariance"):
        if not ctx.has_input(slot):
            continue
        meta = ctx.input(slot)
        if meta.rank != 1 or not dim_eq(meta.shape[0], channels):
            ctx.fail(f"{describe(slot, meta)} must hold one value per channel of "
                     f"{describe('X', x)}", expected=f"shape [{channels}]",
                     found=f"{slot}{list(meta.shape)}")
    ctx.set_output_like("X@GRAD", x)
    ctx.set_output_like("Scale@GRAD", ctx.input("Scale"))
    ctx.set_output_like("Bias@GRAD", ctx.input("Bias"))


_GRADS = ("X", "Scale", "Bias")

# batch_norm_grad: Paddle's slots. Written by hand rather than with grad_of: it reads only Y's
# gradient (MeanOut/VarianceOut are the running statistics, which get none), and Mean/Variance
# only with global statistics (in training SavedMean/SavedVariance hold the batch's).
batch_norm_grad = OpDef(
    "batch_norm_grad",
    inputs=[In("X", "the forward input"), In("Scale", "gamma [C]"), In("Bias", "beta [C]"),
            In("Mean", "running mean [C]: read with global statistics", optional=True),
            In("Variance", "running variance [C]: read with global statistics",
               optional=True),
            In("SavedMean", "batch mean [C] from the forward"),
            In("SavedVariance", "1/sqrt(batch var + epsilon) [C] from the forward"),
            In("Y@GRAD", "gradient of Y")],
    outputs=[Out(grad_name(s), f"gradient of {s}", optional=True) for s in _GRADS],
    attrs=list(batch_norm.attrs.values()),
    infer=_infer_batch_norm_grad,
    differentiable=False,
    doc="Gradient of batch_norm. Bias@GRAD = sum(Y@GRAD), Scale@GRAD = sum(Y@GRAD * xhat) per "
        "channel; X@GRAD = Scale * inv * (Y@GRAD - mean(Y@GRAD) - xhat * mean(Y@GRAD * xhat)) "
        "with batch statistics (SavedMean, SavedVariance = inv), Scale * inv * Y@GRAD with "
        "global ones (Mean, inv = 1/sqrt(Variance + epsilon); the forward's rule: is_test "
        "without trainable_statistics, or use_global_stats).",
)


def _batch_norm_grad(ctx):
    outs = {grad_name(s): ctx.input_grad(s) for s in _GRADS if ctx.wants(s)}
    if not outs:
        return []
    ins = {s: ctx.input(s) for s in ("X", "Scale", "Bias")}
    ins.update(SavedMean=ctx.output("SavedMean"), SavedVariance=ctx.output("SavedVariance"))
    ins[grad_name("Y")] = ctx.output_grad("Y")
    if _global_stats(ctx.attrs):
        ins.update(Mean=ctx.input("Mean"), Variance=ctx.input("Variance"))
    return [GradOp("batch_norm_grad", ins, outs, dict(ctx.attrs))]


batch_norm.grad = _batch_norm_grad

OPS = [batch_norm, batch_norm_grad]
