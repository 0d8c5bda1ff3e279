"""Shape changes without data movement: reshape2 and flatten_contiguous_range.

Both write XShape = [0] + X.dims, an intermediate whose only use is to carry X's shape to the
backward pass without keeping X alive (its data is never allocated).
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import normalize_axis, numel

from ._common import INT_INDEX_DTYPES, expect_one_element, infer_from_xshape


def _set_xshape(ctx, x):
    ctx.set_output("XShape", (0,) + tuple(x.shape), x.dtype)


def _resolve(ctx, x, shape):
    """Paddle's ValidateShape: 0 copies X's dim at that index, one -1 is inferred from the
    element count; dims that stay unknown are -1."""
    if shape.count(-1) > 1:
        ctx.fail("attribute 'shape' may hold at most one -1",
                 expected="one dim inferred", found=f"shape={shape}")
    out, kept_x, infer_at = [], set(), None
    for i, d in enumerate(shape):
        if d == 0:
            if i >= x.rank:
                ctx.fail(f"attribute 'shape' copies dim {i} (0) of input 'X' ({x.name}), which "
                         f"has only {x.rank} dims",
                         expected=f"0 only at indices < {x.rank}", found=f"shape={shape}")
            out.append(x.shape[i])
            kept_x.add(i)
        elif d == -1:
            out.append(-1)
            infer_at = i
        elif d < 0:
            ctx.fail("attribute 'shape' has a negative dim other than -1",
                     expected="dims > 0, 0 (copy) or one -1", found=f"shape={shape}")
        else:
            out.append(d)
    # Dims copied with 0 appear on both sides and cancel, so an unknown batch dim copied
    # through still lets the rest be checked and inferred.
    x_rest = numel([d for i, d in enumerate(x.shape) if i not in kept_x])
    out_rest = numel([d for i, d in enumerate(shape) if d > 0])
    if x_rest < 0:
        return out
    if infer_at is not None:
        if x_rest % out_rest:  # out_rest > 0: only positive dims are counted
            ctx.fail(f"input 'X' ({x.name}) of shape {list(x.shape)} cannot be reshaped to "
                     f"{shape}: the -1 dim is not a whole number",
                     expected=f"a multiple of {out_rest} elements",
                     found=f"{x_rest} elements (dims copied with 0 left out)")
        out[infer_at] = x_rest // out_rest
    elif x_rest != out_rest:
        ctx.fail(f"input 'X' ({x.name}) of shape {list(x.shape)} cannot be reshaped to {shape}",
                 expected="the same number of elements",
                 found=f"{x_rest} vs {out_rest} (dims copied with 0 left out)")
    return out


def _from_tensors(ctx, x, shape):
    # The values of shape tensors are known only at run time. Paddle's layers write the
    # constant dims into 'shape' too (-1 where a tensor decides); use those.
    if ctx.has_input("ShapeTensor"):
        metas = ctx.inputs("ShapeTensor")
        for m in metas:
            expect_one_element(ctx, m, "ShapeTensor")
        rank, source = len(metas), "ShapeTensor"
    else:
        s = ctx.input("Shape")
        if s.rank != 1:
            ctx.fail(f"input 'Shape' ({s.name}) must be 1-D", expected="rank 1",
                     found=f"shape {list(s.shape)}")
        rank, source = s.shape[0], "Shape"
        if rank < 0:
            if not shape:
                ctx.fail(f"the length of input 'Shape' ({s.name}) is unknown, so the output "
                         f"rank is unknown",
                         expected="Shape of known length, or 'shape' with one entry per dim",
                         found=f"Shape {list(s.shape)}, shape={shape}")
            rank = len(shape)
    if not shape:
        return [-1] * rank
    if len(shape) != rank:
        ctx.fail(f"attribute 'shape' and input '{source}' disagree on the output rank",
                 expected=f"{rank} dims in 'shape' (or an empty 'shape')", found=f"shape={shape}")
    out = []
    for i, d in enumerate(shape):
        if d == 0 and i >= x.rank:
            ctx.fail(f"attribute 'shape' copies dim {i} (0) of input 'X' ({x.name}), which has "
                     f"only {x.rank} dims", expected=f"0 only at indices < {x.rank}",
                     found=f"shape={shape}")
        out.append(x.shape[i] if d == 0 else (d if d > 0 else -1))
    return out


def _infer_reshape2(ctx):
    x = ctx.input("X")
    shape = list(ctx.attr("shape"))
    if ctx.has_input("ShapeTensor") or ctx.has_input("Shape"):
        out = _from_tensors(ctx, x, shape)
    else:
        out = _resolve(ctx, x, shape)
    ctx.set_output("Out", out, x.dtype, x.lod_level)
    _set_xshape(ctx, x)


reshape2 = OpDef(
    "reshape2",
    inputs=[
        In("X", "the tensor to reshape"),
        In("Shape", "1-D int tensor holding the new shape (overrides 'shape')", optional=True,
           dtypes=INT_INDEX_DTYPES),
        In("ShapeTensor", "one-element int tensors, one per new dim (overrides 'Shape' and "
           "'shape')", optional=True, duplicable=True, dtypes=INT_INDEX_DTYPES),
    ],
    outputs=[
        Out("Out", "X with the new shape (same data)"),
        Out("XShape", "[0] + X.dims, kept for the backward pass", intermediate=True),
    ],
    attrs=[Attr("shape", "ints", [], "the new shape: 0 copies X's dim at that index, one -1 is "
                "inferred from the element count")],
    infer=_infer_reshape2,
    doc="Out = X with a new shape and the same elements in row-major order. The gradient is "
        "reshape2_grad, which reads XShape.",
)


def _infer_flatten(ctx):
    x = ctx.input("X")
    rank = max(x.rank, 1)  # a 0-D X flattens to [1]
    start = normalize_axis(ctx, ctx.attr("start_axis"), rank, "start_axis")
    stop = normalize_axis(ctx, ctx.attr("stop_axis"), rank, "stop_axis")
    if start > stop:
        ctx.fail("attribute 'start_axis' comes after 'stop_axis'",
                 expected="start_axis <= stop_axis (after counting negatives from the end)",
                 found=f"start_axis={ctx.attr('start_axis')} ({start}), "
                       f"stop_axis={ctx.attr('stop_axis')} ({stop}) for rank {x.rank}")
    dims = list(x.shape) or [1]
    out = dims[:start] + [numel(dims[start:stop + 1])] + dims[stop + 1:]
    ctx.set_output("Out", out, x.dtype, x.lod_level)
    _set_xshape(ctx, x)


flatten_contiguous_range = OpDef(
    "flatten_contiguous_range",
    inputs=[In("X", "the tensor to flatten")],
    outputs=[
        Out("Out", "X with dims start_axis..stop_axis merged into one"),
        Out("XShape", "[0] + X.dims, kept for the backward pass", intermediate=True),
    ],
    attrs=[
        Attr("start_axis", "int", 1, "first dim to merge (negative counts from the end)"),
        Attr("stop_axis", "int", 1, "last dim to merge, inclusive (negative counts from the end)"),
    ],
    infer=_infer_flatten,
    doc="Out = X with dims start_axis through stop_axis merged into their product "
        "(Paddle 2's paddle.flatten). The gradient reads XShape.",
)


def _infer_reshape_grad(ctx):
    x_dims = infer_from_xshape(ctx)
    dout = ctx.input("Out@GRAD")
    n_x, n_out = numel(x_dims), numel(dout.shape)
    if n_x >= 0 and n_out >= 0 and n_x != n_out:
        ctx.fail(f"input 'Out@GRAD' ({dout.name}) must hold as many elements as X (XShape "
                 f"{ctx.input('XShape').name} gives X.dims = {x_dims})",
                 expected=f"{n_x} elements", found=f"{n_out} (shape {list(dout.shape)})")


_GRAD_DOC = ("Gradient of {op}: X@GRAD = Out@GRAD with the shape of X, read from XShape "
             "([0] + X.dims), so X itself need not be kept for the backward pass.")

# reshape2_grad(XShape, Out@GRAD) -> X@GRAD; the shape inputs (Shape, ShapeTensor) are
# integers and get no gradient.
reshape2_grad = grad_of(reshape2, uses=["XShape"], grads=["X"], infer=_infer_reshape_grad,
                        doc=_GRAD_DOC.format(op="reshape2"))
flatten_contiguous_range_grad = grad_of(
    flatten_contiguous_range, uses=["XShape"], grads=["X"], infer=_infer_reshape_grad,
    doc=_GRAD_DOC.format(op="flatten_contiguous_range"))

OPS = [reshape2, flatten_contiguous_range, reshape2_grad, flatten_contiguous_range_grad]
