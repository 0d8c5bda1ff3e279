"""fill_constant and fill_zeros_like / fill_any_like (the core's fill family): constants."""
import numpy as np

from ... import dtypes
from ._common import arg_in, arg_out
from ._runtime_inputs import refuse_tensor_inputs

__all__ = ["EXPORTERS"]


def _fill_constant(ctx, op):
    refuse_tensor_inputs(ctx, op, ("ValueTensor", "ShapeTensor", "ShapeTensorList"))
    shape = list(op.attr("shape"))
    if any(d < 0 for d in shape):
        ctx.fail("fill_constant with an unknown dim", found=f"shape {shape}")
    dtype = dtypes.to_numpy(dtypes.from_proto(op.attr("dtype")))
    text = op.attr("str_value") if op.has_attr("str_value") else ""
    value = op.attr("value")
    if text:  # exact for int64 (a float attribute is not), and for inf/nan
        try:
            value = int(text)
        except ValueError:
            value = float(text)
    array = np.full(shape, value, dtype=dtype)
    ctx.node("Constant", [], arg_out(op, "Out"),
             value=ctx.onnx.numpy_helper.from_array(array))


def _fill_like(value_attr):
    def export(ctx, op):
        x = arg_in(op, "X")
        code = op.attr("dtype") if op.has_attr("dtype") else -1
        dtype = ctx.dtype(x) if code == -1 else dtypes.from_proto(code)
        value = op.attr(value_attr) if value_attr else 0.0
        fill = ctx.onnx.numpy_helper.from_array(np.array([value], dtypes.to_numpy(dtype)))
        ctx.node("ConstantOfShape", [ctx.node("Shape", [x])], arg_out(op, "Out"), value=fill)
    return export


EXPORTERS = {"fill_constant": _fill_constant, "fill_zeros_like": _fill_like(None),
             "fill_any_like": _fill_like("value")}
