"""Helpers the tensor op modules share: dtype enum attributes, shapes given by tensors, and the
shape rule of the grad ops that read XShape.

A private module (leading underscore): the plugin's auto-registration skips it.
"""
from headrace import dtypes as dt
# The element types, dtype enum attributes, kind checks and shape-from-tensor inputs are the
# core's (its fill_constant takes the same shape inputs as the random ops here): one copy.
from headrace.core_ops.ops._common import (INT_INDEX_DTYPES, dtype_attr, enum_name, expect_kind,
                                           expect_one_element, shape_from_inputs,
                                           shape_tensor_inputs)

__all__ = ["FLOAT_DTYPES", "INT_INDEX_DTYPES", "dtype_attr", "enum_name", "shape_tensor_inputs",
           "shape_from_inputs", "expect_one_element", "expect_kind", "infer_from_xshape"]

FLOAT_DTYPES = tuple(dt.FLOAT_DTYPES)


def infer_from_xshape(ctx):
    """Shape rule of reshape2_grad / flatten_contiguous_range_grad (also transpose2_grad's
    base): X@GRAD has the shape XShape[1:] and the dtype and LoD level of Out@GRAD."""
    xshape, dout = ctx.input("XShape"), ctx.input("Out@GRAD")
    if xshape.rank == 0:
        ctx.fail(f"input 'XShape' ({xshape.name}) must be [0] + X.dims (rank >= 1)",
                 expected="rank >= 1", found="shape []")
    if xshape.dtype is not None and dout.dtype is not None and xshape.dtype != dout.dtype:
        ctx.fail(f"input 'Out@GRAD' ({dout.name}) must have the dtype of X (XShape "
                 f"{xshape.name})", expected=xshape.dtype, found=dout.dtype)
    x_dims = list(xshape.shape[1:])
    ctx.set_output("X@GRAD", x_dims, dout.dtype, dout.lod_level)
    return x_dims
