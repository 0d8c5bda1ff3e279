"""top_k (headrace_nn's metrics family): ONNX TopK along the last dim (largest, sorted)."""
from ._common import arg_in, arg_out
from ._runtime_inputs import refuse_tensor_inputs

__all__ = ["EXPORTERS"]


def _top_k(ctx, op):
    refuse_tensor_inputs(ctx, op, ("K",))
    ctx.node("TopK", [arg_in(op, "X"), ctx.ints([op.attr("k")])],
             [arg_out(op, "Out"), arg_out(op, "Indices")], axis=-1, largest=1, sorted=1)


EXPORTERS = {"top_k": _top_k}
