"""expand_v2, expand_as_v2 and Fluid's expand: X broadcast (copied) to a larger shape.

expand_v2 (``paddle.expand``): the target shape comes from the ``shape`` attribute, a 1-D int
tensor ``Shape`` or one-element tensors ``expand_shapes_tensor`` (Shape wins, then the list,
as in Paddle). It may have more dims than X: X's dims line up with its trailing ones, and the
new leading dims must be given (>= 0). For X's own dims, -1 keeps the dim, a dim of 1 becomes
any size (0 included), and any other dim must be given as itself.

expand_as_v2 (``paddle.expand_as``): the target is Y's shape when Y is given (Paddle's kernel
takes Y's dims over the attribute), else ``target_shape`` (Paddle's layers write Y's
build-time shape there, -1 where Y's dim is unknown).

expand (Fluid 1.x, ``fluid.layers.expand``): Out = numpy.tile(X, expand_times), one factor per
dim of X.

Out keeps X's LoD when the rank is unchanged and dim 0 is X's (Paddle shares it when dim 0 is
unchanged). Each gradient sums Out@GRAD over the copies (Paddle's grad ops read X for its
shape, and the shape tensors, which they pass on unused).
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import INT_INDEX_DTYPES, expect_one_element

MAX_RANK = 8  # Paddle's limit for the expand ops (phi's MAX_RANK_SUPPORTED)


def _from_tensors(ctx, attr, tensor_slot, list_slot):
    """The target values given by a shape tensor or a list of one-element tensors, None for
    each value not known at build time (the attribute's entries >= 0 are taken as hints, as
    Paddle's layers write the constant ones there, and -1 (Paddle 2) or -2 (Paddle 3) where a
    tensor decides; Paddle reads them at build time only, so one that cannot hold is no
    error: see ``expanded_shape``); None when neither input is bound."""
    if ctx.has_input(tensor_slot):
        t = ctx.input(tensor_slot)
        if t.rank != 1:
            ctx.fail(f"input '{tensor_slot}' ({t.name}) must be 1-D", expected="rank 1",
                     found=f"shape {list(t.shape)}")
        n = t.shape[0]
        if n < 0:
            if not attr:
                ctx.fail(f"the length of input '{tensor_slot}' ({t.name}) is unknown, so the "
                         f"rank of Out is unknown", expected=f"a {tensor_slot} of known "
                         f"length", found=f"{tensor_slot} shape {list(t.shape)}")
            n = len(attr)
    elif ctx.has_input(list_slot):
        metas = ctx.inputs(list_slot)
        for m in metas:
            expect_one_element(ctx, m, list_slot)
        n = len(metas)
    else:
        return None
    if len(attr) != n:
        return [None] * n
    return [v if v >= 0 else None for v in attr]


def _may_hold(x, n, i, v):
    """Whether value ``v`` at position ``i`` of an ``n``-dim target fits X (None fits)."""
    if v is None:
        return True
    if v < 0:
        return False
    return i < n - x.rank or x.shape[i - n + x.rank] in (1, -1, v)


def expanded_shape(ctx, x, target, what, keep=True, hints=False):
    """Out's shape for X (meta) expanded to ``target`` (values, None where unknown at build
    time); ``keep``: -1 keeps X's dim (expand_v2). ``what`` names where the target came
    from in messages. ``hints``: the values are only hints (the tensors decide at run time):
    one that cannot hold makes its dim unknown instead of an error."""
    rank, n = x.rank, len(target)
    if hints:
        # what the exact rule would refuse here is left to the kernel, with the real values
        target = [v if _may_hold(x, n, i, v) else None for i, v in enumerate(target)]
    if n < rank:
        ctx.fail(f"{what} must have at least as many dims as X ({x.name}, rank {rank})",
                 expected=f">= {rank} values", found=f"{n}: {target}")
    if n > MAX_RANK:
        ctx.fail(f"{what} has more dims than the expand ops support",
                 expected=f"<= {MAX_RANK} values", found=f"{n}")
    diff = n - rank
    out = []
    for i, v in enumerate(target):
        if v is not None and v < (-1 if keep and i >= diff else 0):
            allowed = ">= 0, or -1 to keep X's dim" if keep and i >= diff else ">= 0"
            where = "a new leading dim" if i < diff else f"dim {i - diff} of X"
            ctx.fail(f"{what} holds {v} for {where}", expected=allowed,
                     found=f"{what} = {target}")
        if i < diff:
            out.append(-1 if v is None else v)
            continue
        d = x.shape[i - diff]
        if v is None:
            # unknown: X's dim unless X's dim may be broadcast (1, or itself unknown)
            out.append(d if d not in (1, -1) else -1)
        elif v == -1:
            out.append(d)
        elif d in (1, -1) or d == v:
            out.append(v)
        else:
            ctx.fail(f"dim {i - diff} of X ({x.name}, shape {list(x.shape)}) is {d}, not 1, "
                     f"so {what} must keep it", expected=f"{d} (or -1)" if keep else f"{d}",
                     found=f"{v} in {what} = {target}")
    return out


def _set_out(ctx, x, out):
    same = len(out) == x.rank and x.rank > 0 and out[0] == x.shape[0]
    ctx.set_output("Out", out, x.dtype, x.lod_level if same else 0)


def _infer_expand_v2(ctx):
    x = ctx.input("X")
    attr = list(ctx.attr("shape"))
    target = _from_tensors(ctx, attr, "Shape", "expand_shapes_tensor")
    if target is None:
        out = expanded_shape(ctx, x, attr, "attribute 'shape'")
    else:
        out = expanded_shape(ctx, x, target, "the shape tensors", hints=True)
    _set_out(ctx, x, out)


_SHAPE_INPUTS = [
    In("Shape", "1-D int tensor holding the target shape (overrides expand_shapes_tensor and "
       "'shape')", optional=True, dtypes=INT_INDEX_DTYPES),
    In("expand_shapes_tensor", "one-element int tensors, one per target dim (overrides "
       "'shape')", optional=True, duplicable=True, dtypes=INT_INDEX_DTYPES),
]

expand_v2 = OpDef(
    "expand_v2",
    inputs=[In("X", "the tensor to expand")] + _SHAPE_INPUTS,
    outputs=[Out("Out", "X broadcast to the target shape")],
    attrs=[Attr("shape", "ints", [], "the target shape: X's dims line up with its trailing "
                "ones; -1 keeps a dim of X")],
    infer=_infer_expand_v2,
    doc="Out = X broadcast to the target shape (paddle.expand): new leading dims are added, "
        "dims of 1 repeated, -1 keeps X's dim; at most 8 dims. The gradient is "
        "expand_v2_grad, which sums Out@GRAD over the copies.",
)


def _infer_expand_as_v2(ctx):
    x = ctx.input("X")
    attr = list(ctx.attr("target_shape"))
    if ctx.has_input("Y"):
        y = ctx.input("Y")
        if attr and len(attr) != y.rank:
            ctx.fail(f"attribute 'target_shape' and input 'Y' ({y.name}) disagree on the rank",
                     expected=f"{y.rank} values (Y's shape {list(y.shape)}) or none",
                     found=f"target_shape = {attr}")
        # Y's dims decide at run time; the attribute hints at the ones Y does not know yet
        # (a hint that cannot hold is left unknown: Paddle reads it at build time only)
        target = [d if d >= 0 else (attr[i] if attr and _may_hold(x, y.rank, i, attr[i])
                                    else None) for i, d in enumerate(y.shape)]
        what = "the shape of Y"
    else:
        if not attr and x.rank > 0:
            ctx.fail("expand_as_v2 needs input 'Y' or attribute 'target_shape'",
                     expected="Y, or target_shape with a value per dim", found="neither")
        if any(v < 0 for v in attr):
            ctx.fail("attribute 'target_shape' has a negative dim and no input 'Y' gives it",
                     expected="dims >= 0 (or bind Y)", found=f"target_shape = {attr}")
        target, what = attr, "attribute 'target_shape'"
    _set_out(ctx, x, expanded_shape(ctx, x, target, what, keep=False))


expand_as_v2 = OpDef(
    "expand_as_v2",
    inputs=[In("X", "the tensor to expand"),
            In("Y", "the tensor whose shape Out takes (wins over target_shape)",
               optional=True)],
    outputs=[Out("Out", "X broadcast to Y's shape (or target_shape)")],
    attrs=[Attr("target_shape", "ints", [], "the target shape when Y is not given (Paddle's "
                "layers write Y's shape here, -1 where it is unknown)")],
    infer=_infer_expand_as_v2,
    doc="Out = X broadcast to the shape of Y (paddle.expand_as), or to target_shape without "
        "Y: X's dims line up with the trailing ones, dims of 1 are repeated. The gradient is "
        "expand_as_v2_grad, which sums Out@GRAD over the copies.",
)


def _infer_expand(ctx):
    x = ctx.input("X")
    attr = list(ctx.attr("expand_times"))
    times = _from_tensors(ctx, attr, "ExpandTimes", "expand_times_tensor")
    what = "the expand_times tensors" if times is not None else "attribute 'expand_times'"
    times = attr if times is None else times
    if len(times) != x.rank:
        ctx.fail(f"{what} must hold one factor per dim of X ({x.name}, shape "
                 f"{list(x.shape)})", expected=f"{x.rank} values", found=f"{times}")
    if x.rank > MAX_RANK:
        ctx.fail(f"X ({x.name}) has more dims than expand supports",
                 expected=f"rank <= {MAX_RANK}", found=f"rank {x.rank}")
    out = []
    for d, t in zip(x.shape, times):
        if t is not None and t < 0:
            ctx.fail(f"{what} holds a negative factor", expected="factors >= 0",
                     found=f"{times}")
        out.append(-1 if t is None or d < 0 else d * t)
    _set_out(ctx, x, out)


expand = OpDef(
    "expand",
    inputs=[In("X", "the tensor to tile"),
            In("ExpandTimes", "1-D int tensor holding the factors (overrides "
               "expand_times_tensor and 'expand_times')", optional=True,
               dtypes=INT_INDEX_DTYPES),
            In("expand_times_tensor", "one-element int tensors, one factor per dim of X "
               "(overrides 'expand_times')", optional=True, duplicable=True,
               dtypes=INT_INDEX_DTYPES)],
    outputs=[Out("Out", "X tiled")],
    attrs=[Attr("expand_times", "ints", [], "how many copies of X along each of its dims")],
    infer=_infer_expand,
    doc="Out = numpy.tile(X, expand_times) (Fluid's expand): one factor >= 0 per dim of X. "
        "The gradient is expand_grad, which sums Out@GRAD over the tiles.",
)


def _infer_grad(ctx):
    x, dout = ctx.input("X"), ctx.input("Out@GRAD")
    if x.dtype is not None and dout.dtype is not None and x.dtype != dout.dtype:
        ctx.fail(f"input 'Out@GRAD' ({dout.name}) must have the dtype of X ({x.name})",
                 expected=x.dtype, found=dout.dtype)
    if dout.rank < x.rank:
        ctx.fail(f"input 'Out@GRAD' ({dout.name}) must have at least X's rank",
                 expected=f"rank >= {x.rank}", found=f"shape {list(dout.shape)}")
    ctx.set_output("X@GRAD", x.shape, x.dtype, x.lod_level)


_GRAD_DOC = ("Gradient of {op}: X@GRAD = Out@GRAD summed over the copies of X (X is read for "
             "its shape).")
# <op>_grad(X, the shape tensors, Out@GRAD) -> X@GRAD (Paddle's slots).
expand_v2_grad = grad_of(expand_v2, uses=["X", "Shape", "expand_shapes_tensor"], grads=["X"],
                         infer=_infer_grad, doc=_GRAD_DOC.format(op="expand_v2"))
expand_as_v2_grad = grad_of(expand_as_v2, uses=["X"], grads=["X"], infer=_infer_grad,
                            doc=_GRAD_DOC.format(op="expand_as_v2"))
expand_grad = grad_of(expand, uses=["X", "ExpandTimes", "expand_times_tensor"], grads=["X"],
                      infer=_infer_grad, doc=_GRAD_DOC.format(op="expand"))

OPS = [expand_v2, expand_as_v2, expand, expand_v2_grad, expand_as_v2_grad, expand_grad]
