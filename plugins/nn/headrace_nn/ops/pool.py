"""pool2d: max / average pooling over 2-D windows (plain, global or adaptive)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import expect_rank

from ._common import (FLOATS, LAYOUTS, PADDING_ALGORITHMS, describe, expect_same_shape,
                      int_list, layout_axes, pool_out_size, resolve_paddings)

_AXES = ("height", "width")


def _out_shape(ctx):
    x = ctx.input("X")
    expect_rank(ctx, x, 4, "X")
    c_axis, spatial = layout_axes(x, ctx.attr("data_format"))
    data_dims = [x.shape[a] for a in spatial]
    ksize, strides = list(ctx.attr("ksize")), ctx.attr("strides")
    global_pooling, adaptive = ctx.attr("global_pooling"), ctx.attr("adaptive")
    if adaptive:
        # Adaptive windows are sized by the kernel; ksize names the output grid. Paddle applies
        # global_pooling first, which turns ksize into the input size (an identity grid).
        sizes = data_dims if global_pooling else ksize
    elif global_pooling:
        sizes = [1] * len(data_dims)  # one window over the whole (possibly unknown) plane
    else:
        pads = resolve_paddings(ctx.attr("paddings"), ctx.attr("padding_algorithm"),
                                data_dims, strides, ksize)
        sizes = []
        for i, size in enumerate(data_dims):
            out = pool_out_size(size, ksize[i], pads[2 * i], pads[2 * i + 1], strides[i],
                                ctx.attr("ceil_mode"))
            if size >= 0 and out <= 0:
                ctx.fail(f"{describe('X', x)} {_AXES[i]} ({size}) is smaller than the "
                         f"window ({ksize[i]}) plus padding ({pads[2 * i]}+{pads[2 * i + 1]})",
                         expected="an output size > 0",
                         found=f"output size {out} from X{list(x.shape)}, ksize={ksize}, "
                               f"strides={list(strides)}, "
                               f"paddings={list(ctx.attr('paddings'))}")
            sizes.append(out)
    channels = x.shape[c_axis]
    return [x.shape[0]] + ([channels] + list(sizes) if c_axis == 1 else list(sizes) + [channels])


def _infer_pool2d(ctx):
    x = ctx.input("X")
    ctx.set_output("Out", _out_shape(ctx), x.dtype, x.lod_level)


pool2d = OpDef(
    "pool2d",
    inputs=[In("X", "images [N, C, H, W] (NHWC: [N, H, W, C])", dtypes=FLOATS)],
    outputs=[Out("Out", "[N, C, Ho, Wo] (NHWC: [N, Ho, Wo, C]), X's dtype and LoD")],
    attrs=[
        Attr("pooling_type", "string", doc="max or avg", choices=("max", "avg")),
        Attr("ksize", "ints", doc="(h, w) window; the output grid when adaptive",
             check=int_list(2, "h, w", 1)),
        Attr("global_pooling", "bool", False, "one window over the whole plane; ksize and "
             "paddings are ignored"),
        Attr("strides", "ints", [1, 1], "(h, w) window steps", check=int_list(2, "h, w", 1)),
        Attr("paddings", "ints", [0, 0], "(h, w) both sides, or (top, bottom, left, right)",
             check=int_list((2, 4), "h, w or top, bottom, left, right", 0)),
        Attr("exclusive", "bool", True, "avg: divide by the count of non-padding elements"),
        Attr("adaptive", "bool", False, "output is ksize; window i spans "
             "[floor(i*in/out), ceil((i+1)*in/out))"),
        Attr("ceil_mode", "bool", False, "round the output size up (a last partial window)"),
        Attr("data_format", "string", "NCHW", "X/Out layout; AnyLayout means NCHW",
             choices=LAYOUTS),
        Attr("padding_algorithm", "string", "EXPLICIT",
             "EXPLICIT: use paddings; SAME: out = ceil(in / stride); VALID: no padding",
             choices=PADDING_ALGORITHMS),
        Attr("is_test", "bool", False, "inference mode (no effect on the result)"),
    ],
    infer=_infer_pool2d,
    doc="Out[n, c, y, x] = max or mean of X over window (y*s - p_top .. + k) x "
        "(x*s - p_left .. + k); out = (in - k + p_before + p_after) // s + 1, or with "
        "ceil_mode (in - k + p_before + p_after + s - 1) // s + 1. Padding never wins a max; "
        "avg with exclusive=true counts only the real elements of a window.",
)



def _infer_pool2d_grad(ctx):
    x = ctx.input("X")
    pooled = x._replace(shape=tuple(_out_shape(ctx)))
    expect_same_shape(ctx, pooled, ctx.input("Out"), "Out", "Out", "the pooled X")
    expect_same_shape(ctx, pooled, ctx.input("Out@GRAD"), "Out", "Out@GRAD", "Out")
    ctx.set_output_like("X@GRAD", x)


# pool2d_grad(X, Out, Out@GRAD) -> X@GRAD.
pool2d_grad = grad_of(
    pool2d, uses=["X", "Out"], grads=["X"], infer=_infer_pool2d_grad,
    doc="Gradient of pool2d: max routes each Out@GRAD value to the first maximum of its window "
        "(row-major order); avg spreads Out@GRAD / divisor over the window's real elements, "
        "with the forward's divisor (exclusive, adaptive, ceil_mode and global pooling as "
        "there). Reads X and Out.")

OPS = [pool2d, pool2d_grad]
