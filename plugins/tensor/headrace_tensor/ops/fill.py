"""Constant tensors: fill_constant, assign_value, fill_zeros_like. None has a gradient."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import numel

from ._common import (NUMERIC_DTYPES, TENSOR_KINDS, dtype_attr, enum_name, expect_kind,
                      expect_one_element, shape_from_inputs, shape_tensor_inputs)


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


# dtype -> the attribute holding assign_value's data (Paddle's names).
_VALUE_ATTRS = {"float32": "fp32_values", "int32": "int32_values", "int64": "int64_values",
                "bool": "bool_values", "float64": "fp64_values"}


def _infer_assign_value(ctx):
    shape = list(ctx.attr("shape"))
    if any(d < 0 for d in shape):
        ctx.fail("attribute 'shape' of a constant must be fully known",
                 expected="dims >= 0", found=f"shape={shape}")
    dtype = enum_name(ctx.attr("dtype"))
    key = _VALUE_ATTRS[dtype]
    values = ctx.attr(key)
    if len(values) != numel(shape):
        given = [f"{k} has {len(ctx.attr(k))}" for k in _VALUE_ATTRS.values()
                 if k != key and ctx.attr(k)]
        ctx.fail(f"attribute '{key}' must hold one value per element of shape {shape}"
                 + (f" (for dtype {dtype}; {', '.join(given)})" if given else ""),
                 expected=f"{numel(shape)} values", found=f"{len(values)} values")
    ctx.set_output("Out", shape, dtype)


assign_value = OpDef(
    "assign_value",
    outputs=[Out("Out", "the constant tensor")],
    attrs=[
        Attr("shape", "ints", [], "shape of Out"),
        dtype_attr("dtype", "float32", "element type of Out: bool, int32, int64, float32 or "
                   "float64 (VarType enum)", allowed=tuple(_VALUE_ATTRS)),
        Attr("fp32_values", "floats", [], "the data when dtype is float32"),
        Attr("int32_values", "ints", [], "the data when dtype is int32"),
        Attr("int64_values", "longs", [], "the data when dtype is int64"),
        Attr("bool_values", "bools", [], "the data when dtype is bool"),
        Attr("fp64_values", "float64s", [], "the data when dtype is float64"),
    ],
    infer=_infer_assign_value,
    differentiable=False,
    doc="Out = a constant tensor from Python data: the values attribute matching dtype, in "
        "row-major order, one value per element of shape.",
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

OPS = [fill_constant, assign_value, fill_zeros_like]
