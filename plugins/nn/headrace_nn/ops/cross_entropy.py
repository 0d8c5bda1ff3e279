"""Cross-entropy losses: cross_entropy, cross_entropy2, softmax_with_cross_entropy."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name, grad_of
from headrace.ops.shape import dim_eq, merge_dim, normalize_axis

from ._common import FLOATS, INDEX_DTYPES, describe, expect_same_shape, merge_shapes

# Paddle's cross_entropy kernels read hard labels as int64; softmax_with_cross_entropy in
# Paddle 2.x also takes int32 labels (paddle.nn.functional.cross_entropy passes them through).
CE_LABEL_DTYPES = ("int64",)


def _check_label_dtype(ctx, x, label, xslot, soft, hard_dtypes):
    if soft:
        if label.dtype != x.dtype:
            ctx.fail(f"soft label {describe('Label', label)} must have the dtype of "
                     f"{describe(xslot, x)}", expected=x.dtype, found=label.dtype)
    elif label.dtype not in hard_dtypes:
        ctx.fail(f"hard label {describe('Label', label)} must hold class indices "
                 f"(soft_label=false)", expected=" or ".join(hard_dtypes), found=label.dtype)


def _loss_shape(ctx, x, label, soft):
    """Y's shape for X [..., C]: [..., 1]. Hard labels are [..., 1] or (newer Paddle) [...]."""
    rank = x.rank
    if rank < 1:
        ctx.fail(f"{describe('X', x)} must have a class dimension",
                 expected="rank >= 1", found=f"shape {list(x.shape)}")
    lead = rank - 1
    if soft or label.rank == rank:
        if label.rank != rank:
            ctx.fail(f"soft label {describe('Label', label)} must have the rank of "
                     f"{describe('X', x)}", expected=f"rank {rank}",
                     found=f"Label{list(label.shape)} vs X{list(x.shape)}")
        last = label.shape[-1]
        if soft and not dim_eq(x.shape[-1], last):
            ctx.fail(f"soft label {describe('Label', label)} has {last} classes but "
                     f"{describe('X', x)} has {x.shape[-1]}", expected=f"Label last dim "
                     f"{x.shape[-1]}", found=f"Label{list(label.shape)}, X{list(x.shape)}")
        if not soft and not dim_eq(last, 1):
            ctx.fail(f"hard label {describe('Label', label)} must have a last dim of 1",
                     expected=f"Label shape {list(x.shape[:-1]) + [1]}",
                     found=f"Label{list(label.shape)}")
    elif label.rank != rank - 1:
        ctx.fail(f"hard label {describe('Label', label)} must have X's rank (last dim 1) "
                 f"or one less", expected=f"rank {rank} or {rank - 1}",
                 found=f"Label{list(label.shape)} vs X{list(x.shape)}")
    for i in range(lead):
        if not dim_eq(x.shape[i], label.shape[i]):
            ctx.fail(f"{describe('X', x)} and {describe('Label', label)} must agree on every "
                     f"dim but the last (dim {i}: {x.shape[i]} vs {label.shape[i]})",
                     expected=f"Label dims[:{lead}] == {list(x.shape[:-1])}",
                     found=f"Label{list(label.shape)}, X{list(x.shape)}")
    shape = merge_shapes(x.shape[:lead], label.shape[:lead])
    return shape + [1] if label.rank == rank else shape


def _infer_cross_entropy(ctx):
    x, label = ctx.input("X"), ctx.input("Label")
    soft = ctx.attr("soft_label")
    _check_label_dtype(ctx, x, label, "X", soft, CE_LABEL_DTYPES)
    ctx.set_output("Y", _loss_shape(ctx, x, label, soft), x.dtype, x.lod_level)


def _infer_cross_entropy2(ctx):
    x, label = ctx.input("X"), ctx.input("Label")
    _check_label_dtype(ctx, x, label, "X", False, CE_LABEL_DTYPES)
    ctx.set_output("Y", _loss_shape(ctx, x, label, False), x.dtype, x.lod_level)
    # Paddle appends the marker 0 here (reshape2 prepends it); the grad drops the last dim.
    ctx.set_output("XShape", list(x.shape) + [0], x.dtype, x.lod_level)
    ctx.set_output("MatchX", list(x.shape[:-1]) + [1], x.dtype)


def _infer_softmax_with_cross_entropy(ctx):
    logits, label = ctx.input("Logits"), ctx.input("Label")
    soft = ctx.attr("soft_label")
    rank = logits.rank
    if rank < 1:
        ctx.fail(f"{describe('Logits', logits)} must have a class dimension",
                 expected="rank >= 1", found=f"shape {list(logits.shape)}")
    axis = normalize_axis(ctx, ctx.attr("axis"), rank)
    if axis != rank - 1 and not ctx.attr("numeric_stable_mode"):
        ctx.fail("attribute 'axis' must be the last axis when numeric_stable_mode is false",
                 expected=f"axis -1 or {rank - 1}", found=ctx.attr("axis"))
    _check_label_dtype(ctx, logits, label, "Logits", soft, INDEX_DTYPES)
    if label.rank != rank:
        ctx.fail(f"{describe('Label', label)} must have the rank of "
                 f"{describe('Logits', logits)}", expected=f"rank {rank}",
                 found=f"Label{list(label.shape)} vs Logits{list(logits.shape)}")
    for i in range(rank):
        if i != axis and not dim_eq(logits.shape[i], label.shape[i]):
            ctx.fail(f"{describe('Logits', logits)} and {describe('Label', label)} must agree "
                     f"on every dim but axis {axis} (dim {i}: {logits.shape[i]} vs "
                     f"{label.shape[i]})", expected=f"Label dim {i} == {logits.shape[i]}",
                     found=f"Label{list(label.shape)}, Logits{list(logits.shape)}")
    classes, lab = logits.shape[axis], label.shape[axis]
    if soft and not dim_eq(classes, lab):
        ctx.fail(f"soft label {describe('Label', label)} has {lab} classes on axis {axis} but "
                 f"{describe('Logits', logits)} has {classes}",
                 expected=f"Label dim {axis} == {classes}", found=f"Label{list(label.shape)}")
    if not soft and not dim_eq(lab, 1):
        ctx.fail(f"hard label {describe('Label', label)} must have size 1 on axis {axis}",
                 expected=f"Label dim {axis} == 1", found=f"Label{list(label.shape)}")
    merged = [merge_dim(a, b) if i != axis else a
              for i, (a, b) in enumerate(zip(logits.shape, label.shape))]
    ctx.set_output("Softmax", merged, logits.dtype, logits.lod_level)
    merged[axis] = 1
    ctx.set_output("Loss", merged, logits.dtype, logits.lod_level)


_IGNORE = Attr("ignore_index", "int", -100,
               "hard-label class whose loss and gradient are 0 (soft_label=false only)")

cross_entropy = OpDef(
    "cross_entropy",
    inputs=[In("X", "probabilities [..., C] (usually a softmax output)", dtypes=FLOATS),
            In("Label", "hard: int64 class ids [..., 1] (or [...]); soft: X's dtype, [..., C]")],
    outputs=[Out("Y", "loss [..., 1] (Label.dims for [...] hard labels), X's dtype and LoD")],
    attrs=[Attr("soft_label", "bool", False, "Label is a distribution over the classes"),
           _IGNORE],
    infer=_infer_cross_entropy,
    doc="Hard label: Y = -log(X[..., Label]) (0 where Label == ignore_index). "
        "Soft label: Y = -sum_j Label[..., j] * log(X[..., j]).",
)

cross_entropy2 = OpDef(
    "cross_entropy2",
    inputs=[In("X", "probabilities [..., C]", dtypes=FLOATS),
            In("Label", "int64 class ids [..., 1] (or [...])", dtypes=CE_LABEL_DTYPES)],
    outputs=[Out("Y", "loss [..., 1], X's dtype and LoD"),
             Out("XShape", "X.dims + [0]: carries X's shape and LoD to the gradient",
                 intermediate=True),
             Out("MatchX", "X[..., Label] [..., 1], read by the gradient", intermediate=True)],
    attrs=[_IGNORE],
    infer=_infer_cross_entropy2,
    doc="Hard-label cross entropy (the `cross_entropy` layer's op): Y = -log(X[..., Label]); "
        "the gradient reads MatchX and XShape instead of X.",
)

softmax_with_cross_entropy = OpDef(
    "softmax_with_cross_entropy",
    inputs=[In("Logits", "unscaled log-probabilities, classes along `axis`", dtypes=FLOATS),
            In("Label", "hard: int64/int32 ids with size 1 on `axis`; soft: Logits' dtype "
                        "and shape")],
    outputs=[Out("Softmax", "softmax(Logits) along axis, Logits' shape; read by the "
                            "gradient (layers may fetch it)", intermediate=True),
             Out("Loss", "Logits.dims with dims[axis] = 1, Logits' dtype and LoD")],
    attrs=[Attr("soft_label", "bool", False, "Label is a distribution over the classes"),
           _IGNORE,
           Attr("numeric_stable_mode", "bool", True,
                "subtract the max before exp; axis must be last when false"),
           Attr("axis", "int", -1, "the class axis; negative counts from the end"),
           Attr("use_softmax", "bool", True,
                "false (Paddle 2.x): Logits already hold probabilities; Softmax = Logits")],
    infer=_infer_softmax_with_cross_entropy,
    doc="Softmax = softmax(Logits, axis); Loss = cross entropy of Softmax against Label "
        "(hard: -log Softmax[Label], 0 where Label == ignore_index; soft: -sum Label*log "
        "Softmax). The gradient reads Label and Softmax: Softmax - onehot(Label).",
)


# -- gradients ----------------------------------------------------------------------------------

def _infer_cross_entropy_grad(ctx):
    x, label, dy = ctx.input("X"), ctx.input("Label"), ctx.input("Y@GRAD")
    soft = ctx.attr("soft_label")
    _check_label_dtype(ctx, x, label, "X", soft, CE_LABEL_DTYPES)
    y = x._replace(shape=tuple(_loss_shape(ctx, x, label, soft)))
    expect_same_shape(ctx, y, dy, "Y", "Y@GRAD", "Y")
    ctx.set_output_like("X@GRAD", x)


# cross_entropy_grad(X, Label, Y@GRAD) -> X@GRAD (Paddle's slots); Label gets no gradient.
cross_entropy_grad = grad_of(
    cross_entropy, uses=["X", "Label"], grads=["X"], infer=_infer_cross_entropy_grad,
    doc="Gradient of cross_entropy: hard X@GRAD[..., Label] = -Y@GRAD / X[..., Label] (0 "
        "elsewhere and on ignore_index rows); soft X@GRAD = -Label * Y@GRAD / X. Label gets no "
        "gradient.")


def _infer_cross_entropy_grad2(ctx):
    xshape, label = ctx.input("XShape"), ctx.input("Label")
    if xshape.rank < 2:
        ctx.fail(f"{describe('XShape', xshape)} must be X.dims + [0] (X of rank >= 1)",
                 expected="rank >= 2", found=f"XShape{list(xshape.shape)}")
    x = xshape._replace(shape=tuple(xshape.shape[:-1]))
    _check_label_dtype(ctx, x, label, "X", False, CE_LABEL_DTYPES)
    y = x._replace(shape=tuple(_loss_shape(ctx, x, label, False)))
    expect_same_shape(ctx, y, ctx.input("Y@GRAD"), "Y", "Y@GRAD", "Y")
    match = x._replace(shape=tuple(x.shape[:-1]) + (1,))
    expect_same_shape(ctx, match, ctx.input("MatchX"), "MatchX", "MatchX", "X.dims[:-1] + [1]")
    ctx.set_output_like("X@GRAD", x)


# Paddle names the gradient of cross_entropy2 "cross_entropy_grad2" (not cross_entropy2_grad):
# programs Paddle saved with their backward ops use that name, so it is kept here. It reads
# MatchX (X at the label, from the forward), Label and XShape (X's dims) instead of X. MatchX
# comes first: the executor picks the kernel by the dtype of the first bound input.
cross_entropy_grad2 = OpDef(
    "cross_entropy_grad2",
    inputs=[In("MatchX", "X[..., Label] from the forward [..., 1]"),
            In("Label", "the forward's hard labels"),
            In("XShape", "X.dims + [0]: X's shape and LoD level"),
            In("Y@GRAD", "gradient of Y")],
    outputs=[Out("X@GRAD", "gradient of X", optional=True)],
    attrs=list(cross_entropy2.attrs.values()),
    infer=_infer_cross_entropy_grad2,
    differentiable=False,
    doc="Gradient of cross_entropy2: X@GRAD[..., Label] = -Y@GRAD / MatchX, 0 elsewhere and on "
        "ignore_index rows; X itself is not read.",
)


def _cross_entropy2_grad(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("cross_entropy_grad2",
                   {"MatchX": ctx.output("MatchX"), "Label": ctx.input("Label"),
                    "XShape": ctx.output("XShape"), "Y@GRAD": ctx.output_grad("Y")},
                   {grad_name("X"): ctx.input_grad("X")}, dict(ctx.attrs))]


cross_entropy2.grad = _cross_entropy2_grad


def _infer_softmax_with_cross_entropy_grad(ctx):
    sm, label, dloss = ctx.input("Softmax"), ctx.input("Label"), ctx.input("Loss@GRAD")
    rank = sm.rank
    if rank < 1:
        ctx.fail(f"{describe('Softmax', sm)} must have a class dimension",
                 expected="rank >= 1", found=f"shape {list(sm.shape)}")
    axis = normalize_axis(ctx, ctx.attr("axis"), rank)
    _check_label_dtype(ctx, sm, label, "Softmax", ctx.attr("soft_label"), INDEX_DTYPES)
    loss = sm._replace(shape=tuple(1 if i == axis else d for i, d in enumerate(sm.shape)))
    expect_same_shape(ctx, loss, dloss, "Loss", "Loss@GRAD", "Loss")
    expect_same_shape(ctx, sm if ctx.attr("soft_label") else loss, label, "Label", "Label",
                      "Softmax" if ctx.attr("soft_label") else "Loss (size 1 on axis)")
    ctx.set_output_like("Logits@GRAD", sm)


# softmax_with_cross_entropy_grad(Softmax, Label, Loss@GRAD) -> Logits@GRAD (Paddle's slots;
# Softmax first: the executor picks the kernel by the dtype of the first bound input).
softmax_with_cross_entropy_grad = grad_of(
    softmax_with_cross_entropy, uses=["Softmax", "Label"], grads=["Logits"],
    infer=_infer_softmax_with_cross_entropy_grad,
    doc="Gradient of softmax_with_cross_entropy: hard (Softmax - onehot(Label)) * Loss@GRAD, 0 "
        "on ignore_index positions; soft (Softmax * sum(Label) - Label) * Loss@GRAD (Paddle's "
        "(Softmax - Label) * Loss@GRAD when Label is a distribution). use_softmax=false: "
        "cross_entropy's gradient w.r.t. the probabilities. Label gets no gradient.")

OPS = [cross_entropy, cross_entropy2, softmax_with_cross_entropy, cross_entropy_grad,
       cross_entropy_grad2, softmax_with_cross_entropy_grad]
