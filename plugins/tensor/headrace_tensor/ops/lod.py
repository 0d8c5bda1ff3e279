"""lod_reset: the same data with a new LoD (level-of-detail sequence offsets)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp

from ._common import INT_INDEX_DTYPES


def _check_target_lod(ctx, x):
    lod = list(ctx.attr("target_lod"))
    if not lod:
        ctx.fail("without input 'Y' the new LoD must come from attribute 'target_lod'",
                 expected="a non-empty target_lod or an input Y", found="target_lod=[]")
    if lod[0] != 0 or any(b < a for a, b in zip(lod, lod[1:])):
        ctx.fail("attribute 'target_lod' must be offsets: start at 0, never decrease",
                 expected="[0, ...] non-decreasing", found=f"target_lod={lod}")
    rows = x.shape[0] if x.rank else 1
    if rows >= 0 and lod[-1] != rows:
        ctx.fail(f"attribute 'target_lod' must end at the number of rows of input 'X' "
                 f"({x.name})", expected=f"last offset {rows} (shape {list(x.shape)})",
                 found=f"target_lod={lod}")


def _infer_lod_reset(ctx):
    x = ctx.input("X")
    append = ctx.attr("append")
    if ctx.has_input("Y") and ctx.input("Y").lod_level > 0:
        lod_level = ctx.input("Y").lod_level  # Y's LoD replaces X's, append or not
    else:
        if ctx.has_input("Y"):
            y = ctx.input("Y")
            if y.dtype not in INT_INDEX_DTYPES:
                ctx.fail(f"input 'Y' ({y.name}) has no LoD, so its data must be the offsets",
                         expected="int32 or int64 data (or a Y with lod_level >= 1)",
                         found=y.dtype)
        else:
            _check_target_lod(ctx, x)
        # One new level: the only one, or added below X's levels.
        lod_level = x.lod_level + 1 if append else 1
    ctx.set_output("Out", x.shape, x.dtype, lod_level)


lod_reset = OpDef(
    "lod_reset",
    inputs=[
        In("X", "the tensor whose LoD is replaced"),
        In("Y", "gives the new LoD: its LoD, or (when it has none) its data as offsets",
           optional=True),
    ],
    outputs=[Out("Out", "X's data with the new LoD")],
    attrs=[
        Attr("target_lod", "ints", [], "the new level-0 offsets when Y is not given"),
        Attr("append", "bool", False, "append the new level to X's LoD instead of replacing it"),
    ],
    infer=_infer_lod_reset,
    doc="Out = X's data with a new LoD: Y's LoD, Y's data as offsets, or target_lod; with "
        "append the new level is added below X's levels. The gradient passes through.",
)

OPS = [lod_reset]


def _lod_reset_grad(ctx):
    # The data passes through unchanged (only the LoD differs), so X@GRAD = Out@GRAD; Y gives
    # offsets only and gets no gradient.
    if not ctx.wants("X"):
        return []
    return [GradOp("assign", {"X": ctx.output_grad("Out")}, {"Out": ctx.input_grad("X")}, {})]


lod_reset.grad = _lod_reset_grad
