"""pad: X with a constant border (Paddle's pad op, ``fluid.layers.pad``).

``paddings`` holds two counts per dim of X, ``[before_0, after_0, before_1, after_1, ...]``,
each >= 0; Out's dim i is ``X.dim[i] + before_i + after_i``, filled with ``pad_value`` (a
float attribute: integer tensors get it truncated toward zero, as Paddle's cast does). Out
keeps X's LoD when dim 0 is unchanged. The gradient, pad_grad, cuts X's part out of
Out@GRAD.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

# Paddle's CPU kernels of pad
PAD_DTYPES = ("float32", "float64", "int32", "int64", "complex64", "complex128")


def _non_negative(v):
    bad = [p for p in v if p < 0]
    return f"must all be >= 0 (found {bad[0]})" if bad else None


def _paddings(ctx, rank, slot):
    paddings = list(ctx.attr("paddings"))
    if len(paddings) != 2 * rank:
        ctx.fail(f"attribute 'paddings' must hold two values (before, after) per dim of "
                 f"{slot} (rank {rank})", expected=f"{2 * rank} values",
                 found=f"{len(paddings)}: paddings = {paddings}")
    return paddings


def _infer_pad(ctx):
    x = ctx.input("X")
    paddings = _paddings(ctx, x.rank, "X")
    out = [d + paddings[2 * i] + paddings[2 * i + 1] if d >= 0 else -1
           for i, d in enumerate(x.shape)]
    same = x.rank > 0 and paddings[0] == paddings[1] == 0       # dim 0 unchanged
    ctx.set_output("Out", out, x.dtype, x.lod_level if same else 0)


pad = OpDef(
    "pad",
    inputs=[In("X", "the tensor to pad", dtypes=PAD_DTYPES)],
    outputs=[Out("Out", "X inside a border of pad_value")],
    attrs=[Attr("paddings", "ints", doc="[before_0, after_0, before_1, after_1, ...]: how "
                "many pad_value elements go before and after X along each dim (>= 0)",
                check=_non_negative),
           Attr("pad_value", "float", 0.0, "the value of the border")],
    infer=_infer_pad,
    doc="Out = X with paddings[2i] elements of pad_value before it and paddings[2i+1] after "
        "it along each dim i (numpy.pad, mode 'constant'). The gradient is pad_grad.",
)


def _infer_pad_grad(ctx):
    dout = ctx.input("Out@GRAD")
    paddings = _paddings(ctx, dout.rank, "Out@GRAD")
    shape = []
    for i, d in enumerate(dout.shape):
        before, after = paddings[2 * i], paddings[2 * i + 1]
        if 0 <= d < before + after:
            ctx.fail(f"input 'Out@GRAD' ({dout.name}) is smaller than its paddings along dim "
                     f"{i}", expected=f">= {before + after}", found=f"{d}")
        shape.append(d - before - after if d >= 0 else -1)
    ctx.set_output("X@GRAD", shape, dout.dtype, dout.lod_level)


# pad_grad(Out@GRAD) -> X@GRAD (Paddle's: the paddings give X's shape).
pad_grad = grad_of(pad, uses=[], grads=["X"], infer=_infer_pad_grad,
                   doc="Gradient of pad: X@GRAD = Out@GRAD without the border the paddings "
                       "describe.")

OPS = [pad, pad_grad]
