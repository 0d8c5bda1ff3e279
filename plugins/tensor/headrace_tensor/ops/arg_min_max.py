"""arg_max and arg_min: the position of the largest / smallest entry along an axis (the first
one on ties, as NumPy and Paddle). Integer results: no gradient."""
from headrace import dtypes as dt
from headrace.ops import Attr, In, OpDef, Out

from ._common import enum_name

_INDEX_CODES = (-1, dt.to_proto("int32"), dt.to_proto("int64"))


def _dtype_check(value):
    if value not in _INDEX_CODES:
        return "must be -1 or 3 (int64) or 2 (int32)"
    return None


def _infer_arg(ctx):
    x = ctx.input("X")
    axis, keepdims = ctx.attr("axis"), ctx.attr("keepdims")
    code = ctx.attr("dtype")
    dtype = "int64" if code == -1 else enum_name(code)
    # A result without dims is 0-D, as in Paddle 3 (Fluid's convention was [1]).
    if ctx.attr("flatten"):
        shape = [1] * x.rank if keepdims else []
    else:
        if x.rank == 0:
            ctx.fail(f"input 'X' ({x.name}) must have rank >= 1 unless flatten is set",
                     expected="rank >= 1", found="shape []")
        if not -x.rank <= axis < x.rank:
            ctx.fail(f"attribute 'axis' must name a dim of X ({x.name}, rank {x.rank})",
                     expected=f"{-x.rank} <= axis < {x.rank}", found=f"axis = {axis}")
        axis %= x.rank
        if x.shape[axis] == 0:
            ctx.fail(f"input 'X' ({x.name}) has no entries along axis {axis} to choose from",
                     expected=f"X.shape[{axis}] > 0", found=f"shape {list(x.shape)}")
        shape = [1 if k == axis else d for k, d in enumerate(x.shape)
                 if keepdims or k != axis]
    ctx.set_output("Out", shape, dtype)


def _arg_op(op_type, what):
    return OpDef(
        op_type,
        inputs=[In("X", "the tensor to search")],
        outputs=[Out("Out", f"the index of the {what} entry along axis (int64, or int32 when "
                     "dtype says so)")],
        attrs=[Attr("axis", "long", 0, "the dim to search along (negative: from the end)"),
               Attr("keepdims", "bool", False, "keep the searched dim, with size 1"),
               Attr("flatten", "bool", False, "search the flattened X (the index is flat)"),
               Attr("dtype", "int", 3, "VarType of Out: 3 int64 (also -1), 2 int32",
                    check=_dtype_check)],
        infer=_infer_arg,
        differentiable=False,
        doc=f"Out = numpy.arg{what[:3]}(X, axis) (the first on ties); no gradient.",
    )


arg_max = _arg_op("arg_max", "largest")
arg_min = _arg_op("arg_min", "smallest")

OPS = [arg_max, arg_min]
