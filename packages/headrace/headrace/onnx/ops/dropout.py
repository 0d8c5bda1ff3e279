"""dropout in test mode (headrace_nn's dropout family): no randomness. upscale_in_train leaves
X as it is (Identity); downgrade_in_infer, Paddle's default, scales it by 1 - dropout_prob."""
from ._common import arg_in, arg_out

__all__ = ["EXPORTERS"]


def _dropout(ctx, op):
    if not op.attr("is_test"):
        ctx.fail("dropout in training mode is random", expected="is_test = True (an inference "
                 "program: clone(for_test=True))", found="is_test = False")
    x, out = arg_in(op, "X"), arg_out(op, "Out")
    keep = 1.0 - float(op.attr("dropout_prob"))
    if op.attr("dropout_implementation") == "upscale_in_train" or keep == 1.0:
        ctx.node("Identity", [x], out)
    else:
        ctx.node("Mul", [x, ctx.scalar(keep, x)], out)


EXPORTERS = {"dropout": _dropout}
