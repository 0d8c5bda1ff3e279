"""sequence_enumerate: for each id of an id sequence, the window of win_size ids that starts
there, padded with pad_value past the sequence's end (n-gram features). No gradient: ids are
integers."""
from headrace.ops import Attr, In, OpDef, Out

from ._common import INDEX_DTYPES, at_least, describe


def _infer_sequence_enumerate(ctx):
    x = ctx.input("X")
    if x.rank != 2 or x.shape[1] not in (1, -1):
        ctx.fail(f"{describe('X', x)} must be an id sequence batch [rows, 1]",
                 expected="shape [rows, 1]", found=f"shape {list(x.shape)}")
    if not ctx.is_runtime and x.lod_level < 1:
        ctx.fail(f"{describe('X', x)} must be a sequence batch (a LoDTensor)",
                 expected="lod_level >= 1", found=f"lod_level {x.lod_level}")
    ctx.set_output("Out", [x.shape[0], ctx.attr("win_size")], x.dtype, x.lod_level)


sequence_enumerate = OpDef(
    "sequence_enumerate",
    inputs=[In("X", "id sequences [rows, 1] (the first LoD level)", dtypes=INDEX_DTYPES)],
    outputs=[Out("Out", "[rows, win_size]: row r holds ids r .. r + win_size - 1 of its "
                 "sequence, pad_value past its end; X's LoD")],
    attrs=[Attr("win_size", "int", doc="the window length", check=at_least(2)),
           Attr("pad_value", "int", 0, "the id written past a sequence's end")],
    infer=_infer_sequence_enumerate,
    differentiable=False,
    doc="Out[r] = the win_size ids of X's sequence from row r on, pad_value where the "
        "sequence has ended (Paddle's sequence_enumerate).",
)

OPS = [sequence_enumerate]
