"""cast (headrace_tensor's cast family): out_dtype is a VarType code."""
from ... import dtypes
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _cast(ctx, op):
    ctx.cast(arg_in(op, "X"), dtypes.from_proto(op.attr("out_dtype")), arg_out(op, "Out"))


EXPORTERS = {"cast": _cast}
