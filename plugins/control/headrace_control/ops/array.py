"""write_to_array / read_from_array / lod_array_length: element access and length of a
LOD_TENSOR_ARRAY.

An array variable's declared shape, dtype and lod_level describe its elements.
"""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import EMPTY, GradOp, grad_name

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



def _infer_write_grad(ctx):
    if ctx.has_output("X@GRAD"):
        ctx.set_output_like("X@GRAD", ctx.input("X"))


write_to_array_grad = OpDef(
    "write_to_array_grad",
    inputs=[
        In("X", "the forward element (its shape and dtype give the zeros)"),
        In("I", "the position", dtypes=("int64",)),
        In("Out@GRAD", "the array's gradient (kind lod_tensor_array; may have no value)",
           optional=True),
    ],
    outputs=[Out("X@GRAD", "the gradient of X: position I of Out@GRAD, zeros where nothing "
                 "reached it")],
    infer=_infer_write_grad,
    differentiable=False,
    doc="Gradient of write_to_array: X@GRAD = Out@GRAD[I], or zeros like X when that position "
        "(or the whole array gradient) has no value.",
)


def _infer_read_grad(ctx):
    g = ctx.input("Out@GRAD")
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", g.shape, g.dtype, g.lod_level, kind="lod_tensor_array")


read_from_array_grad = OpDef(
    "read_from_array_grad",
    inputs=[
        In("I", "the position", dtypes=("int64",)),
        In("Out@GRAD", "the gradient of the element read"),
    ],
    outputs=[Out("X@GRAD", "the array's gradient, updated in place: Out@GRAD is added at "
                 "position I (an array's gradient is shared by every step of a loop)")],
    infer=_infer_read_grad,
    differentiable=False,
    doc="Gradient of read_from_array: X@GRAD[I] += Out@GRAD (the array grows as needed).",
)


def _write_grad_maker(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("write_to_array_grad",
                   {"X": ctx.input("X"), "I": ctx.input("I"), "Out@GRAD": ctx.output_grad("Out")},
                   {"X@GRAD": ctx.input_grad("X")}, {})]


def _read_grad_maker(ctx):
    (g,) = ctx.input_grad("X")
    if g == EMPTY:
        return []
    return [GradOp("read_from_array_grad",
                   {"I": ctx.input("I"), "Out@GRAD": [grad_name(ctx.output("Out")[0])]},
                   {"X@GRAD": [g]}, {})]


write_to_array.grad = _write_grad_maker
read_from_array.grad = _read_grad_maker

OPS = [write_to_array, read_from_array, lod_array_length, write_to_array_grad,
       read_from_array_grad]
