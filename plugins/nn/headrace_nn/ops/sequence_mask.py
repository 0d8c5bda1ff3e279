"""sequence_mask: lengths to a mask, Y[..., j] = j < X[...] (the padding mask of a batch of
sequences). No gradient."""
from headrace import dtypes as dt
from headrace.ops import Attr, In, OpDef, Out

from ._common import describe

INTS = ("int32", "int64")


def _dtype_check(v):
    return None if v in {dt.to_proto(n) for n in ("bool", "int32", "int64", "float32",
                                                  "float64")} else \
        "must be a VarType enum of bool, int32, int64, float32 or float64"


def _infer_sequence_mask(ctx):
    x = ctx.input("X")
    maxlen = ctx.attr("maxlen")
    if maxlen == 0 or maxlen < -1:
        ctx.fail("attribute 'maxlen' must be positive, or -1 (the largest length in X)",
                 expected="maxlen > 0 or -1", found=f"maxlen = {maxlen}")
    if ctx.has_input("MaxLenTensor"):
        maxlen = -1
    if x.rank < 1 and not ctx.is_runtime:
        ctx.fail(f"{describe('X', x)} must hold the lengths", expected="rank >= 1",
                 found=f"shape {list(x.shape)}")
    ctx.set_output("Y", list(x.shape) + [maxlen], dt.from_proto(ctx.attr("out_dtype")))


sequence_mask = OpDef(
    "sequence_mask",
    inputs=[In("X", "the lengths", dtypes=INTS),
            In("MaxLenTensor", "the mask's width, one int (overrides maxlen)", optional=True,
               dtypes=INTS)],
    outputs=[Out("Y", "X.shape + [maxlen]: 1 where the position is within the length")],
    attrs=[Attr("maxlen", "int", -1, "the mask's width (-1: the largest length in X)"),
           Attr("out_dtype", "int", dt.to_proto("int64"), "Y's element type (VarType enum)",
                check=_dtype_check)],
    infer=_infer_sequence_mask,
    differentiable=False,
    doc="Y[..., j] = (j < X[...]) in out_dtype, j from 0 to maxlen - 1.",
)

OPS = [sequence_mask]
