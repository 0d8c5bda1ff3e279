"""cast: Out = X converted to out_dtype."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import GradOp

from ._common import dtype_attr, enum_name, expect_kind


def _infer_cast(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, ("lod_tensor", "selected_rows"), "X")
    in_dtype = enum_name(ctx.attr("in_dtype"))
    if x.dtype is not None and x.dtype != in_dtype:
        ctx.fail(f"attribute 'in_dtype' does not match the dtype of input 'X' ({x.name})",
                 expected=f"in_dtype = {ctx.attr('in_dtype')} ({in_dtype}) to be X's dtype",
                 found=f"X is {x.dtype}")
    ctx.set_output_like("Out", x, dtype=enum_name(ctx.attr("out_dtype")))


cast = OpDef(
    "cast",
    inputs=[In("X", "the tensor to convert")],
    outputs=[Out("Out", "X converted: shape and LoD level of X, dtype out_dtype")],
    attrs=[
        dtype_attr("in_dtype", None, "element type of X (VarType enum)"),
        dtype_attr("out_dtype", None, "element type of Out (VarType enum)"),
    ],
    infer=_infer_cast,
    doc="Out = X converted element-wise to out_dtype (C-style conversion; float to int "
        "truncates toward zero, nonzero to bool is true). The gradient is a cast back.",
)

OPS = [cast]


def _cast_grad(ctx):
    # Out = X converted element-wise, so X@GRAD = Out@GRAD converted back: a cast from
    # out_dtype to in_dtype (Paddle's cast_grad). A conversion to or from a non-float type has
    # a zero derivative wherever it has one; the cast back still gives X@GRAD X's dtype.
    if not ctx.wants("X"):
        return []
    return [GradOp("cast", {"X": ctx.output_grad("Out")}, {"Out": ctx.input_grad("X")},
                   {"in_dtype": ctx.attrs["out_dtype"], "out_dtype": ctx.attrs["in_dtype"]})]


cast.grad = _cast_grad
