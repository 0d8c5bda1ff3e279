"""sequence_conv (Paddle's): a convolution over the time steps of each sequence. Row t of Out
is the concatenation of contextLength rows of X's sequence, from row t + contextStart on
(positions outside the sequence read zeros, or PaddingData's rows when paddingTrainable: the
up-padding rows first, for positions before the start, then the down-padding rows), times
Filter [contextLength * D, M]. Out keeps X's LoD (one level, as Paddle requires).

The gradient gives X, Filter and (when paddingTrainable) PaddingData theirs; Paddle's grad
maker binds PaddingData only then.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name
from headrace.ops.shape import dim_eq

from ._common import at_least, describe

FLOATS = ("float32", "float64")


def _stride_is_one(value):
    # Paddle's attribute allows any stride > 0 but its shape rule refuses all but 1.
    return None if value == 1 else "must be 1 (sequence_conv supports only contextStride 1)"


def pads(start, length):
    """(up, down): PaddingData's rows for the positions before and after a sequence."""
    return max(0, -start), max(0, start + length - 1)


def _check(ctx):
    """Paddle's checks of X, Filter and PaddingData; returns (X, Filter)."""
    x, w = ctx.input("X"), ctx.input("Filter")
    start, length = ctx.attr("contextStart"), ctx.attr("contextLength")
    if x.rank != 2 or w.rank != 2:
        ctx.fail(f"{describe('X', x)} and {describe('Filter', w)} must be 2-D",
                 expected="X [T, D], Filter [contextLength * D, M]",
                 found=f"X{list(x.shape)}, Filter{list(w.shape)}")
    if not ctx.is_runtime and x.lod_level != 1:
        ctx.fail(f"{describe('X', x)} must be a batch of sequences with one LoD level",
                 expected="lod_level 1", found=f"lod_level {x.lod_level}")
    if start + length < 1:
        # Paddle's im2col refuses a window that ends before the row it computes.
        ctx.fail(f"the window of contextLength {length} rows from contextStart {start} ends "
                 f"before the row it computes",
                 expected="contextStart + contextLength >= 1",
                 found=f"{start} + {length} = {start + length}")
    d = x.shape[1]
    if d >= 0 and not dim_eq(w.shape[0], length * d):
        ctx.fail(f"{describe('Filter', w)} must have contextLength * D rows",
                 expected=f"Filter[{length * d}, M] ({length} * {d})",
                 found=f"Filter{list(w.shape)}")
    if w.dtype != x.dtype:
        ctx.fail(f"{describe('Filter', w)} must have X's dtype", expected=x.dtype,
                 found=w.dtype)
    if ctx.attr("paddingTrainable"):
        if not ctx.has_input("PaddingData"):
            ctx.fail("paddingTrainable needs the PaddingData input",
                     expected="PaddingData [up + down, D]", found="no PaddingData")
        if start == 0 and length == 1:
            ctx.fail("a window of the row alone (contextStart 0, contextLength 1) has no "
                     "padding to train", expected="paddingTrainable False",
                     found="paddingTrainable True")
        p = ctx.input("PaddingData")
        up, down = pads(start, length)
        if p.rank != 2 or not dim_eq(p.shape[0], up + down) or not dim_eq(p.shape[1], d):
            ctx.fail(f"{describe('PaddingData', p)} must hold the {up} up- and {down} "
                     f"down-padding rows of width D",
                     expected=f"[{up + down}, {d}]", found=f"{list(p.shape)}")
        if p.dtype != x.dtype:
            ctx.fail(f"{describe('PaddingData', p)} must have X's dtype", expected=x.dtype,
                     found=p.dtype)
    return x, w


def _infer_sequence_conv(ctx):
    x, w = _check(ctx)
    ctx.set_output("Out", (x.shape[0], w.shape[1]), x.dtype, x.lod_level)


ATTRS = [
    Attr("contextLength", "int", doc="the window's height: rows of X per output row",
         check=at_least(1)),
    Attr("contextStart", "int", 0, "the window's first row relative to the output row "
         "(negative: rows before it)"),
    Attr("contextStride", "int", 1, "the window's stride; only 1", check=_stride_is_one),
    Attr("paddingTrainable", "bool", False, "positions outside a sequence read PaddingData's "
         "rows instead of zeros"),
]

sequence_conv = OpDef(
    "sequence_conv",
    inputs=[In("X", "[T, D] a batch of sequences (one LoD level)", dtypes=FLOATS),
            In("PaddingData", "[up + down, D] the rows read outside a sequence (with "
               "paddingTrainable): up = max(0, -contextStart), down = max(0, contextStart + "
               "contextLength - 1)", optional=True, dtypes=FLOATS),
            In("Filter", "[contextLength * D, M]", dtypes=FLOATS)],
    outputs=[Out("Out", "[T, M] with X's LoD")],
    attrs=ATTRS,
    infer=_infer_sequence_conv,
    doc="Out[t] = concat(X[t + contextStart + j] for j < contextLength) @ Filter within each "
        "sequence; positions outside it read zeros or PaddingData's rows.",
)

GRADS = ("X", "PaddingData", "Filter")


def _infer_sequence_conv_grad(ctx):
    x, w = _check(ctx)
    g = ctx.input("Out@GRAD")
    if g.rank != 2 or not dim_eq(g.shape[0], x.shape[0]) or not dim_eq(g.shape[1], w.shape[1]):
        ctx.fail(f"{describe('Out@GRAD', g)} must be shaped like Out",
                 expected=f"[{x.shape[0]}, {w.shape[1]}]", found=f"{list(g.shape)}")
    for slot in GRADS:
        if ctx.has_output(grad_name(slot)) and ctx.has_input(slot):
            ctx.set_output_like(grad_name(slot), ctx.input(slot))


sequence_conv_grad = OpDef(
    "sequence_conv_grad",
    inputs=[In("X", "the forward X"),
            In("PaddingData", "the forward PaddingData (with paddingTrainable)", optional=True),
            In("Filter", "the forward Filter"),
            In("Out@GRAD", "the gradient of Out")],
    outputs=[Out(grad_name(s), f"the gradient of {s}", optional=True) for s in GRADS],
    attrs=ATTRS,
    infer=_infer_sequence_conv_grad,
    differentiable=False,
    doc="Gradient of sequence_conv: dCol = Out@GRAD @ Filter^T scattered back to X's rows "
        "(and PaddingData's), Filter@GRAD = Col^T @ Out@GRAD.",
)


def _grad(ctx):
    # Paddle's maker: PaddingData and its gradient only when the padding is trained.
    slots = ["X", "Filter"]
    if ctx.attrs.get("paddingTrainable") and ctx.input("PaddingData"):
        slots.append("PaddingData")
    outs = {grad_name(s): ctx.input_grad(s) for s in slots if ctx.wants(s)}
    if not outs:
        return []
    ins = {s: ctx.input(s) for s in slots}
    ins["Out@GRAD"] = ctx.output_grad("Out")
    return [GradOp("sequence_conv_grad", ins, outs, dict(ctx.attrs))]


sequence_conv.grad = _grad

OPS = [sequence_conv, sequence_conv_grad]
