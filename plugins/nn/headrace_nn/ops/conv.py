"""conv2d: 2-D convolution (cross-correlation) with strides, paddings, dilations and groups."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dim_eq, expect_rank

from ._common import (FLOATS, LAYOUTS, PADDING_ALGORITHMS, at_least, conv_out_size, describe,
                      expect_same_shape, int_list, layout_axes, resolve_paddings)

_AXES = ("height", "width")


def _output_shape(ctx):
    """Output's shape from Input, Filter and the attributes (checking them); also checks Bias
    and ResidualData when bound."""
    x, w = ctx.input("Input"), ctx.input("Filter")
    groups = ctx.attr("groups")
    expect_rank(ctx, x, 4, "Input")
    expect_rank(ctx, w, 4, "Filter")
    if w.dtype != x.dtype:
        ctx.fail(f"{describe('Filter', w)} must have the dtype of {describe('Input', x)}",
                 expected=x.dtype, found=w.dtype)
    c_axis, spatial = layout_axes(x, ctx.attr("data_format"))
    channels, m = x.shape[c_axis], w.shape[0]
    if channels >= 0 and w.shape[1] >= 0 and channels != w.shape[1] * groups:
        ctx.fail(f"{describe('Input', x)} has {channels} channels but {describe('Filter', w)} "
                 f"expects {w.shape[1] * groups} (Filter dim 1 = {w.shape[1]}, "
                 f"groups={groups})", expected=f"Input channels == Filter.dims[1] * groups "
                 f"= {w.shape[1] * groups}", found=f"Input{list(x.shape)} "
                 f"({ctx.attr('data_format')}), Filter{list(w.shape)}")
    if m >= 0 and m % groups:
        ctx.fail(f"{describe('Filter', w)} has {m} output channels, not divisible by "
                 f"groups={groups}", expected=f"Filter.dims[0] a multiple of {groups}",
                 found=f"Filter{list(w.shape)}")
    strides, dilations = ctx.attr("strides"), list(ctx.attr("dilations"))
    data_dims = [x.shape[a] for a in spatial]
    ksize = list(w.shape[2:])
    algorithm = ctx.attr("padding_algorithm")
    pads = resolve_paddings(ctx.attr("paddings"), algorithm, data_dims, strides, ksize)
    if algorithm == "SAME":
        dilations = [1, 1]  # Paddle's SAME ignores dilation: out = ceil(in / stride)
    sizes = []
    for i, size in enumerate(data_dims):
        out = conv_out_size(size, ksize[i], dilations[i], pads[2 * i], pads[2 * i + 1],
                            strides[i])
        if size >= 0 and ksize[i] >= 0 and out <= 0:
            ctx.fail(f"{describe('Input', x)} {_AXES[i]} ({size}) is smaller than the "
                     f"dilated filter ({dilations[i] * (ksize[i] - 1) + 1}) plus padding "
                     f"({pads[2 * i]}+{pads[2 * i + 1]})", expected="an output size > 0",
                     found=f"output size {out} from Input{list(x.shape)}, "
                           f"Filter{list(w.shape)}, strides={list(strides)}, "
                           f"paddings={list(ctx.attr('paddings'))}, "
                           f"dilations={list(ctx.attr('dilations'))}")
        sizes.append(out)
    shape = [x.shape[0]] + ([m] + sizes if c_axis == 1 else sizes + [m])
    if ctx.has_input("Bias"):
        b = ctx.input("Bias")
        if b.rank != 1 or not dim_eq(b.shape[0], m):
            ctx.fail(f"{describe('Bias', b)} must hold one value per output channel",
                     expected=f"shape [{m}]", found=f"Bias{list(b.shape)}")
    if ctx.has_input("ResidualData"):
        r = ctx.input("ResidualData")
        if r.rank != 4 or not all(dim_eq(a, b) for a, b in zip(r.shape, shape)):
            ctx.fail(f"{describe('ResidualData', r)} must have the shape of Output",
                     expected=f"shape {shape}", found=f"ResidualData{list(r.shape)}")
    return shape


def _infer_conv2d(ctx):
    x = ctx.input("Input")
    ctx.set_output("Output", _output_shape(ctx), x.dtype, x.lod_level)


conv2d = OpDef(
    "conv2d",
    inputs=[In("Input", "images [N, C, H, W] (NHWC: [N, H, W, C])", dtypes=FLOATS),
            In("Filter", "filters [M, C/groups, kh, kw] in every data_format", dtypes=FLOATS),
            In("Bias", "[M], added per output channel (Paddle's fused MKL-DNN form)",
               optional=True, dtypes=FLOATS),
            In("ResidualData", "added to Output (Paddle's fuse_residual_connection form)",
               optional=True, dtypes=FLOATS)],
    outputs=[Out("Output", "[N, M, Ho, Wo] (NHWC: [N, Ho, Wo, M]), Input's dtype and LoD")],
    attrs=[
        Attr("strides", "ints", [1, 1], "(h, w) window steps", check=int_list(2, "h, w", 1)),
        Attr("paddings", "ints", [0, 0], "(h, w) both sides, or (top, bottom, left, right)",
             check=int_list((2, 4), "h, w or top, bottom, left, right", 0)),
        Attr("dilations", "ints", [1, 1], "(h, w) spacing of filter taps",
             check=int_list(2, "h, w", 1)),
        Attr("groups", "int", 1, "channel groups; Input and Filter channels split evenly",
             check=at_least(1)),
        Attr("data_format", "string", "NCHW", "Input/Output layout; AnyLayout means NCHW",
             choices=LAYOUTS),
        Attr("padding_algorithm", "string", "EXPLICIT",
             "EXPLICIT: use paddings; SAME: out = ceil(in / stride), dilation ignored; "
             "VALID: no padding", choices=PADDING_ALGORITHMS),
        Attr("is_test", "bool", False, "inference mode (no effect on the result)"),
        Attr("fuse_residual_connection", "bool", False,
             "Paddle's oneDNN flag that its kernel reads ResidualData; headrace adds a bound "
             "ResidualData either way (the inference passes set it for Paddle)"),
    ],
    infer=_infer_conv2d,
    doc="Output[n, m] = sum over the group's channels c and taps (i, j) of "
        "Input[n, c, y*s + i*d - p_top, x*s + j*d - p_left] * Filter[m, c, i, j] "
        "(+ Bias[m] + ResidualData when bound); "
        "out = (in + p_before + p_after - (d*(k-1)+1)) // s + 1. "
        "The gradient reads Input and Filter.",
)



def _infer_conv2d_grad(ctx):
    x, w, dy = ctx.input("Input"), ctx.input("Filter"), ctx.input("Output@GRAD")
    out = dy._replace(shape=tuple(_output_shape(ctx)))
    expect_same_shape(ctx, out, dy, "Output", "Output@GRAD", "Output")
    ctx.set_output_like("Input@GRAD", x)
    ctx.set_output_like("Filter@GRAD", w)
    ctx.set_output("Bias@GRAD", [w.shape[0]], w.dtype)
    ctx.set_output_like("ResidualData@GRAD", dy)


# conv2d_grad(Input, Filter, Output@GRAD) -> Input@GRAD, Filter@GRAD (Paddle's slots), and
# Bias@GRAD / ResidualData@GRAD for the fused forms (they need no forward value).
conv2d_grad = grad_of(
    conv2d, uses=["Input", "Filter"], grads=["Input", "Filter", "Bias", "ResidualData"],
    infer=_infer_conv2d_grad,
    doc="Gradient of conv2d: Input@GRAD = col2im(Filter^T @ Output@GRAD), Filter@GRAD = "
        "Output@GRAD @ im2col(Input)^T, per group; Bias@GRAD sums Output@GRAD per channel; "
        "ResidualData@GRAD = Output@GRAD. Reads Input and Filter.")

OPS = [conv2d, conv2d_grad]
