"""tensor_array_to_tensor: the elements of a tensor array joined into one tensor (concatenated
along ``axis``, or stacked on a new one), as StaticRNN's outputs are gathered over time."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp

from ._common import expect_kind


def _infer(ctx):
    arr = ctx.input("X")
    expect_kind(ctx, arr, "lod_tensor_array", "X")
    if ctx.is_runtime:
        # On real values (the executor re-runs the rule when the kernel fails) an array has
        # no elements' shape to check: the kernel's own message is the precise one.
        return
    rank = len(arr.shape)
    axis = ctx.attr("axis")
    stack = ctx.attr("use_stack")
    limit = rank + 1 if stack else rank
    if not -limit <= axis < limit:
        ctx.fail(f"attribute 'axis' must name a dim of the {'stacked' if stack else 'joined'} "
                 f"tensor (elements of shape {list(arr.shape)})",
                 expected=f"{-limit} <= axis < {limit}", found=f"axis = {axis}")
    axis = axis + limit if axis < 0 else axis
    shape = list(arr.shape)
    if stack:
        shape.insert(axis, -1)  # the length of the array
    elif shape:
        shape[axis] = -1
    ctx.set_output("Out", shape, arr.dtype)
    ctx.set_output("OutIndex", (-1,), "int32")


tensor_array_to_tensor = OpDef(
    "tensor_array_to_tensor",
    inputs=[In("X", "the array (kind lod_tensor_array); every element must have a value")],
    outputs=[Out("Out", "the elements joined along axis (or stacked on a new axis)"),
             Out("OutIndex", "each element's size along axis, int32 (as Paddle, also when "
                 "stacking; 1 each when stacking on a new last axis)", intermediate=True)],
    attrs=[Attr("axis", "int", 0, "the axis to join along (or of the new stacked axis)"),
           Attr("use_stack", "bool", False, "stack on a new axis instead of concatenating")],
    infer=_infer,
    doc="Out = concat(X, axis) or stack(X, axis) (Paddle's tensor_array_to_tensor). The "
        "gradient cuts Out@GRAD back into an array.",
)


def _infer_grad(ctx):
    arr = ctx.input("X")
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", arr.shape, arr.dtype, arr.lod_level, kind="lod_tensor_array")


tensor_array_to_tensor_grad = OpDef(
    "tensor_array_to_tensor_grad",
    inputs=[In("X", "the forward array (its elements' shapes)"),
            In("Out@GRAD", "the gradient of the joined tensor")],
    outputs=[Out("X@GRAD", "the array's gradient, one element per element of X")],
    attrs=[Attr("axis", "int", 0, "as the forward op's"),
           Attr("use_stack", "bool", False, "as the forward op's")],
    infer=_infer_grad,
    differentiable=False,
    doc="Gradient of tensor_array_to_tensor: Out@GRAD cut along axis into the elements' "
        "sizes (unstacked when use_stack), added to what X@GRAD already holds (the array's "
        "other readers' gradients).",
)


def _grad_maker(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("tensor_array_to_tensor_grad",
                   {"X": ctx.input("X"), "Out@GRAD": ctx.output_grad("Out")},
                   {"X@GRAD": ctx.input_grad("X")},
                   {"axis": ctx.attrs["axis"], "use_stack": ctx.attrs["use_stack"]})]


tensor_array_to_tensor.grad = _grad_maker

OPS = [tensor_array_to_tensor, tensor_array_to_tensor_grad]
