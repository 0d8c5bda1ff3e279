"""Constant tensors: fill_constant (autodiff's loss-gradient seed, initializers, constants of
regularizers and clipping), fill_zeros_like (autodiff's stand-in for a missing gradient) and
fill_any_like (Paddle's paddle.static.gradients seeds a target's gradient with it). None has a
gradient."""
from headrace import dtypes as dt
from headrace.ops import Attr, In, OpDef, Out

from ._common import (ELEMENT_DTYPES, NUMERIC_DTYPES, TENSOR_KINDS, dtype_attr, enum_name,
                      expect_kind, expect_one_element, shape_from_inputs, shape_tensor_inputs)


def _str_value_check(v):
    # Paddle parses str_value as a double ("inf", "-inf", "nan", "1e-30" included).
    if v == "":
        return None
    try:
        float(v)
    except ValueError:
        return "must be empty or a number ('1.5', '1e10', 'inf', 'nan')"
    return None


def _infer_fill_constant(ctx):
    if ctx.has_input("ValueTensor"):
        expect_one_element(ctx, ctx.input("ValueTensor"), "ValueTensor")
    ctx.set_output("Out", shape_from_inputs(ctx), enum_name(ctx.attr("dtype")))


fill_constant = OpDef(
    "fill_constant",
    inputs=shape_tensor_inputs() + [
        In("ValueTensor", "one-element tensor holding the fill value (overrides value)",
           optional=True, dtypes=NUMERIC_DTYPES + ("bool",)),
    ],
    outputs=[Out("Out", "the filled tensor")],
    attrs=[
        dtype_attr("dtype", "float32", "element type of Out (VarType enum, FP32 = 5)"),
        Attr("shape", "longs", [], "shape of Out; -1 only where a shape tensor gives the dim"),
        Attr("value", "float", 0.0, "the fill value"),
        Attr("str_value", "string", "", "the fill value as text (exact for int64 and inf/nan); "
             "overrides value when not empty", check=_str_value_check),
        Attr("force_cpu", "bool", False, "keep Out in host memory"),
    ],
    infer=_infer_fill_constant,
    differentiable=False,
    doc="Out = a tensor of the given shape and dtype, every element equal to value "
        "(str_value or ValueTensor when given).",
)


def _infer_fill_zeros_like(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, TENSOR_KINDS, "X")
    ctx.set_output_like("Out", x)


fill_zeros_like = OpDef(
    "fill_zeros_like",
    inputs=[In("X", "the tensor whose shape and dtype Out takes")],
    outputs=[Out("Out", "zeros, shape and dtype of X")],
    infer=_infer_fill_zeros_like,
    differentiable=False,
    doc="Out = zeros shaped like X (the backward pass uses it for missing gradients).",
)

_LIKE_CODES = {-1} | {dt.to_proto(n) for n in ELEMENT_DTYPES}


def _like_dtype_check(v):
    if v not in _LIKE_CODES:
        return f"must be -1 (X's dtype) or an element type: {sorted(_LIKE_CODES)}"
    return None


def _infer_fill_any_like(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, ("lod_tensor",), "X")
    code = ctx.attr("dtype")
    # Paddle shares X's LoD with Out.
    ctx.set_output("Out", x.shape, x.dtype if code == -1 else enum_name(code), x.lod_level)


fill_any_like = OpDef(
    "fill_any_like",
    inputs=[In("X", "the tensor whose shape (and, with dtype -1, element type) Out takes")],
    outputs=[Out("Out", "X's shape filled with value")],
    attrs=[Attr("value", "float", 0.0, "the value every element of Out holds"),
           Attr("dtype", "int", -1, "Out's element type (VarType enum); -1: X's",
                check=_like_dtype_check)],
    infer=_infer_fill_any_like,
    differentiable=False,
    doc="Out = value in X's shape and LoD, in dtype (X's when -1); an integer dtype must hold "
        "the value. paddle.static.gradients seeds each target's gradient with it (value 1).",
)

OPS = [fill_constant, fill_zeros_like, fill_any_like]
