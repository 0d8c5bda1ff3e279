"""split_lod_tensor / merge_lod_tensor: route the rows (or sequences) of a batch to the two
branches of an ``IfElse`` by a per-entry bool mask, and merge the branches back in order.

Each op's gradient is the other one (as in Paddle): split's is a merge of the output
gradients, merge's a split of the output gradient.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp

from ._common import expect_kind


def _level_attr():
    return Attr("level", "int", 0, "the LoD level whose entries the mask selects (0: the "
                "outermost sequences, or the rows of a tensor without LoD)",
                check=lambda v: "must be >= 0" if v < 0 else None)


def _check_mask(ctx):
    mask = ctx.input("Mask")
    expect_kind(ctx, mask, "lod_tensor", "Mask")
    ctx.expect(len(mask.shape) == 2 and mask.shape[1] in (1, -1),
               f"input 'Mask' ({mask.name}) must be a column of one bool per entry",
               expected="shape [N, 1]", found=f"shape {list(mask.shape)}")


def _check_level(ctx, x, slot):
    level = ctx.attr("level")
    ok = level < x.lod_level or (level == 0 and x.lod_level == 0)
    ctx.expect(ok, f"attribute level {level} needs input '{slot}' ({x.name}) to have more "
                   f"than {level} LoD levels",
               expected=f"lod_level > {level}", found=f"lod_level {x.lod_level}")


def _infer_split(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, "lod_tensor", "X")
    _check_mask(ctx)
    _check_level(ctx, x, "X")
    # The outputs keep the LoD levels from `level` down (Paddle drops the levels above).
    shape = (-1,) + tuple(x.shape[1:]) if x.shape else x.shape
    lod_level = max(x.lod_level - ctx.attr("level"), 0)
    for slot in ("OutTrue", "OutFalse"):
        ctx.set_output(slot, shape, x.dtype, lod_level)


def _split_grad(ctx):
    # The gradient of a split is the merge of the branch gradients (Paddle's maker).
    if not ctx.wants("X"):
        return []
    return [GradOp("merge_lod_tensor",
                   {"X": ctx.input("X"), "Mask": ctx.input("Mask"),
                    "InTrue": ctx.output_grad("OutTrue"), "InFalse": ctx.output_grad("OutFalse")},
                   {"Out": ctx.input_grad("X")}, {"level": ctx.attrs["level"]})]


split_lod_tensor = OpDef(
    "split_lod_tensor",
    inputs=[
        In("X", "the batch: rows, or sequences at LoD level `level`"),
        In("Mask", "one bool per entry of X at `level`, shape [N, 1]", dtypes=("bool",)),
    ],
    outputs=[
        Out("OutTrue", "the entries whose mask is true, in order, with their LoD below `level`"),
        Out("OutFalse", "the entries whose mask is false, likewise"),
    ],
    attrs=[_level_attr()],
    infer=_infer_split,
    grad=_split_grad,
    doc="Routes each entry of X (a row, or a whole sequence at LoD level `level`) to OutTrue "
        "or OutFalse by Mask. A branch that receives nothing is a tensor of zero rows. "
        "The gradient of X is merge_lod_tensor of the output gradients.",
)


def _infer_merge(ctx):
    _check_mask(ctx)
    x = ctx.input("X")
    expect_kind(ctx, x, "lod_tensor", "X")
    level = ctx.attr("level")
    ctx.expect(level == 0 or x.lod_level >= level,
               f"attribute level {level} needs input 'X' ({x.name}) to have at least {level} "
               f"LoD levels (the levels above the merged entries come from X)",
               expected=f"lod_level >= {level}", found=f"lod_level {x.lod_level}")
    t, f = ctx.input("InTrue"), ctx.input("InFalse")
    for slot, meta in (("InTrue", t), ("InFalse", f)):
        expect_kind(ctx, meta, "lod_tensor", slot)
    ctx.expect(t.dtype == f.dtype, f"inputs 'InTrue' ({t.name}) and 'InFalse' ({f.name}) "
               f"must have one dtype", expected=t.dtype, found=f.dtype)
    tail_t, tail_f = tuple(t.shape[1:]), tuple(f.shape[1:])
    same = len(tail_t) == len(tail_f) and all(
        a == b or -1 in (a, b) for a, b in zip(tail_t, tail_f))
    ctx.expect(same, f"inputs 'InTrue' ({t.name}) and 'InFalse' ({f.name}) must agree "
               f"beyond their first dim", expected=f"[N, {', '.join(map(str, tail_t))}]",
               found=f"shape {list(f.shape)}")
    ctx.set_output("Out", (-1,) + tail_t, t.dtype, max(t.lod_level, f.lod_level) + level)


def _merge_grad(ctx):
    # The gradient of a merge is the split of the output gradient (Paddle's maker); X only
    # lends its LoD and gets no gradient.
    if not (ctx.wants("InTrue") or ctx.wants("InFalse")):
        return []
    return [GradOp("split_lod_tensor",
                   {"X": ctx.output_grad("Out"), "Mask": ctx.input("Mask")},
                   {"OutTrue": ctx.input_grad("InTrue"), "OutFalse": ctx.input_grad("InFalse")},
                   {"level": ctx.attrs["level"]})]


merge_lod_tensor = OpDef(
    "merge_lod_tensor",
    inputs=[
        In("X", "the LoD reference: its levels above `level` are the output's (any dtype)"),
        In("Mask", "one bool per entry, shape [N, 1]", dtypes=("bool",)),
        In("InTrue", "the entries for the true positions of Mask, in order"),
        In("InFalse", "the entries for the false positions of Mask, in order"),
    ],
    outputs=[Out("Out", "the entries of InTrue and InFalse interleaved as Mask says")],
    attrs=[_level_attr()],
    infer=_infer_merge,
    grad=_merge_grad,
    doc="Out takes, for each entry of Mask in order, the next entry (row, or sequence with its "
        "LoD) of InTrue where the mask is true and of InFalse where it is false; X's LoD "
        "levels above `level` are put on top. A branch with no value (its block did not run, "
        "or its gradient was never produced) counts as zeros for its entries. The gradients "
        "of InTrue and InFalse are split_lod_tensor of Out's gradient.",
)

OPS = [split_lod_tensor, merge_lod_tensor]
