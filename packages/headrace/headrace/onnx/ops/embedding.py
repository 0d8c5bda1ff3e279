"""lookup_table and lookup_table_v2 (headrace_nn's embedding family): Gather of W's rows;
lookup_table's Ids end in a dim of 1 that Out drops; rows looked up at padding_idx are zeros."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _lookup(drop_last):
    def export(ctx, op):
        w, ids, out = arg_in(op, "W"), arg_in(op, "Ids"), arg_out(op, "Out")
        id_rank, id_dtype = ctx.rank(ids) - (1 if drop_last else 0), ctx.dtype(ids)
        if drop_last:
            ids = ctx.squeeze(ids, [id_rank])
        pad = op.attr("padding_idx")
        if pad == -1:
            ctx.node("Gather", [w, ids], out, axis=0)
            return
        vocab = ctx.shape(w)[0]
        pad = pad + vocab if pad < 0 else pad
        rows = ctx.node("Gather", [w, ids], axis=0)
        # [..., 1] mask of the padding lookups, broadcast over the row.
        is_pad = ctx.unsqueeze(ctx.node("Equal", [ids, ctx.const(pad, id_dtype)]), [id_rank])
        ctx.node("Where", [is_pad, ctx.scalar(0, w), rows], out)
    return export


EXPORTERS = {"lookup_table": _lookup(True), "lookup_table_v2": _lookup(False)}
