"""assign_value: a constant tensor from Python data (``layers.assign`` of a NumPy array). No
gradient."""
from headrace.ops import Attr, OpDef, Out
from headrace.ops.shape import numel

from ._common import dtype_attr, enum_name


# dtype -> the attribute holding assign_value's data (Paddle's names).
VALUE_ATTRS = {"float32": "fp32_values", "int32": "int32_values", "int64": "int64_values",
               "bool": "bool_values", "float64": "fp64_values"}


def _infer_assign_value(ctx):
    shape = list(ctx.attr("shape"))
    if any(d < 0 for d in shape):
        ctx.fail("attribute 'shape' of a constant must be fully known",
                 expected="dims >= 0", found=f"shape={shape}")
    dtype = enum_name(ctx.attr("dtype"))
    key = VALUE_ATTRS[dtype]
    values = ctx.attr(key)
    if len(values) != numel(shape):
        given = [f"{k} has {len(ctx.attr(k))}" for k in VALUE_ATTRS.values()
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
                   "float64 (VarType enum)", allowed=tuple(VALUE_ATTRS)),
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

OPS = [assign_value]
