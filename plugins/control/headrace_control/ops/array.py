"""write_to_array / read_from_array / lod_array_length: element access and length of a
LOD_TENSOR_ARRAY.

An array variable's declared shape, dtype and lod_level describe its elements.
"""
from headrace.ops import In, OpDef, Out

from ._common import expect_kind, expect_one_element


def _check_index(ctx):
    i = ctx.input("I")
    expect_kind(ctx, i, "lod_tensor", "I")
    expect_one_element(ctx, i, "I")


def _infer_write(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, "lod_tensor", "X")
    _check_index(ctx)
    ctx.set_output("Out", x.shape, x.dtype, x.lod_level, kind="lod_tensor_array")


write_to_array = OpDef(
    "write_to_array",
    inputs=[
        In("X", "the tensor to store"),
        In("I", "the position, an int64 tensor of one element", dtypes=("int64",)),
    ],
    outputs=[Out("Out", "the array (kind lod_tensor_array); it grows to hold position I")],
    infer=_infer_write,
    doc="Out[I] = X (a copy, with X's LoD); the array is extended when I is past its end. "
        "The gradient of X is read_from_array of Out's gradient.",
)


def _infer_read(ctx):
    arr = ctx.input("X")
    expect_kind(ctx, arr, "lod_tensor_array", "X")
    _check_index(ctx)
    ctx.set_output("Out", arr.shape, arr.dtype, arr.lod_level)


read_from_array = OpDef(
    "read_from_array",
    inputs=[
        In("X", "the array (kind lod_tensor_array)"),
        In("I", "the position, an int64 tensor of one element", dtypes=("int64",)),
    ],
    outputs=[Out("Out", "the element at position I (shape, dtype, LoD level of the elements)")],
    infer=_infer_read,
    doc="Out = X[I]. The gradient writes Out's gradient to position I of the array's gradient.",
)



def _infer_length(ctx):
    expect_kind(ctx, ctx.input("X"), "lod_tensor_array", "X")
    ctx.set_output("Out", (1,), "int64")


lod_array_length = OpDef(
    "lod_array_length",
    inputs=[In("X", "the array (kind lod_tensor_array)")],
    outputs=[Out("Out", "its length, an int64 tensor of shape [1]")],
    infer=_infer_length,
    differentiable=False,
    doc="Out = len(X): one past the highest position written (0 for an array never "
        "written), as Paddle's array_length.",
)

OPS = [write_to_array, read_from_array, lod_array_length]
