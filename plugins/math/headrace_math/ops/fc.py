"""fc: Paddle Inference's fused fully connected op, Out = act(Input @ W + Bias).

Input is viewed as a [prod(dims[:in_num_col_dims]), prod(dims[in_num_col_dims:])] matrix, W
is [K, N], Bias holds N values ([N] or [1, N]); activation_type is "" (none) or "relu", the
two Paddle's fc kernels run. No user layer emits it: the inference passes
(headrace.passes.fc_fuse) rewrite mul + elementwise_add (+ relu) into it, so it has no
gradient, as in Paddle (an inference-only op).
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import dim_eq, numel

from ._common import FLOATS, at_least, label, same_dtype

ACTIVATIONS = ("", "relu")


def _infer_fc(ctx):
    x, w = ctx.input("Input"), ctx.input("W")
    n = ctx.attr("in_num_col_dims")
    if x.rank <= n:
        ctx.fail(f"{label(x, 'Input')} of rank {x.rank} cannot be flattened at "
                 f"in_num_col_dims={n}", expected=f"Input of rank > {n}",
                 found=f"rank {x.rank}, shape {list(x.shape)}")
    if w.rank != 2:
        ctx.fail(f"{label(w, 'W')} must be a matrix", expected="W of rank 2",
                 found=f"rank {w.rank}, shape {list(w.shape)}")
    width = numel(x.shape[n:])
    if not dim_eq(width, w.shape[0]):
        ctx.fail(f"{label(x, 'Input')}'s flattened width {width} != {label(w, 'W')}'s height "
                 f"{w.shape[0]}", expected=f"prod(Input.dims[{n}:]) == W.dims[0]",
                 found=f"Input{list(x.shape)}, W{list(w.shape)}")
    dtype = same_dtype(ctx, x, w, "Input", "W")
    if ctx.has_input("Bias"):
        b = ctx.input("Bias")
        same_dtype(ctx, x, b, "Input", "Bias")
        size = numel(b.shape)
        if (b.rank not in (1, 2) or (b.rank == 2 and not dim_eq(b.shape[0], 1))
                or not dim_eq(size, w.shape[1])):
            ctx.fail(f"{label(b, 'Bias')} must hold one value per output column",
                     expected=f"Bias of shape [{w.shape[1]}] or [1, {w.shape[1]}]",
                     found=f"shape {list(b.shape)}")
    ctx.set_output_like("Out", x, shape=list(x.shape[:n]) + [w.shape[1]], dtype=dtype)


fc = OpDef(
    "fc",
    inputs=[In("Input", "input, viewed as a matrix split at in_num_col_dims", dtypes=FLOATS),
            In("W", "weight [K, N]", dtypes=FLOATS),
            In("Bias", "bias, [N] or [1, N]", optional=True, dtypes=FLOATS)],
    outputs=[Out("Out", "Input.dims[:in_num_col_dims] + [N]; LoD of Input")],
    attrs=[
        Attr("in_num_col_dims", "int", 1, "Input's leading dims that form the matrix rows",
             check=at_least(1)),
        Attr("activation_type", "string", "", "activation applied after the bias: '' or "
             "'relu'", choices=ACTIVATIONS),
        Attr("padding_weights", "bool", False, "Paddle's MKL padding of W by 4 columns; "
             "headrace never pads (must be false)", choices=(False,)),
    ],
    infer=_infer_fc,
    differentiable=False,
    doc="Out = act(Input @ W + Bias) with Input flattened to [prod(dims[:in_num_col_dims]), "
        "K], W [K, N], Bias [N] (optional), act '' or 'relu' (activation_type); one GEMM, "
        "then the bias and activation in one pass over Out. Inference only (no gradient); "
        "made by the fc_fuse pass from mul + elementwise_add (+ relu).",
)

OPS = [fc]
