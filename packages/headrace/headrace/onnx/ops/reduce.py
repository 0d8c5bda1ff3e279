"""reduce_* and mean (headrace_math's reduce family)."""
from ... import dtypes
from ._common import arg_in, arg_out, norm_axes

__all__ = ["EXPORTERS"]


def _code(op, name):
    """A VarType code attribute (-1 or absent: none)."""
    return op.attr(name) if op.has_attr(name) and op.attr(name) != -1 else None


def _reduce(onnx_op):
    def export(ctx, op):
        x, out = arg_in(op, "X"), arg_out(op, "Out")
        rank = ctx.rank(x)
        dims = op.attr("dim")
        axes = list(range(rank)) if op.attr("reduce_all") or not dims or rank == 0 \
            else sorted(set(norm_axes(dims, rank)))
        in_code, out_code = _code(op, "in_dtype"), _code(op, "out_dtype")
        if in_code is not None:
            x = ctx.cast(x, dtypes.from_proto(in_code))
        reduced = ctx.reduce(onnx_op, x, axes, op.attr("keep_dim"),
                             None if out_code is not None else out)
        if out_code is not None:
            ctx.cast(reduced, dtypes.from_proto(out_code), out)
    export.__name__ = f"export_{onnx_op.lower()}"
    return export


def _mean(ctx, op):
    # mean: the average of every element, a 0-d Out.
    ctx.reduce("ReduceMean", arg_in(op, "X"), None, False, arg_out(op, "Out"))


EXPORTERS = {"reduce_sum": _reduce("ReduceSum"), "reduce_mean": _reduce("ReduceMean"),
             "reduce_max": _reduce("ReduceMax"), "reduce_min": _reduce("ReduceMin"),
             "reduce_prod": _reduce("ReduceProd"), "mean": _mean}
