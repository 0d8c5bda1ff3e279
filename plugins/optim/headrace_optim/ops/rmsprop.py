"""rmsprop: RMSProp (Tieleman & Hinton), optionally centered, with momentum."""
from headrace.ops import Attr

from ._common import State, at_least, in_range, optimizer_op


def _check_centered(ctx):
    # Only the centered variant keeps the mean gradient; without it the update is undefined.
    if ctx.attr("centered"):
        for slot, bound in (("MeanGrad", ctx.has_input("MeanGrad")),
                            ("MeanGradOut", ctx.has_output("MeanGradOut"))):
            if not bound:
                ctx.fail(f"centered RMSProp needs '{slot}'", expected=f"a variable for {slot}",
                         found="nothing (centered=True)")


rmsprop = optimizer_op(
    "rmsprop",
    "MeanSquareOut = decay MeanSquare + (1 - decay) Grad^2; centered: MeanGradOut = decay "
    "MeanGrad + (1 - decay) Grad and the denominator is sqrt(MeanSquareOut - MeanGradOut^2 + "
    "epsilon), else sqrt(MeanSquareOut + epsilon); MomentOut = momentum Moment + LearningRate "
    "Grad / denominator; ParamOut = Param - MomentOut.",
    states=[
        State("MeanSquare", "running mean of Grad^2, shape of Param"),
        State("MeanGrad", "running mean of Grad (centered only), shape of Param", optional=True),
        State("Moment", "the momentum buffer, shape of Param"),
    ],
    attrs=[
        Attr("epsilon", "float", 1e-10, "added inside the square root", check=at_least(0.0)),
        Attr("decay", "float", 0.9, "discount of the running means (rho)",
             check=in_range(0.0, 1.0)),
        Attr("momentum", "float", 0.0, "momentum coefficient", check=at_least(0.0)),
        Attr("centered", "bool", False, "subtract the squared mean gradient (needs MeanGrad)"),
    ],
    extra_check=_check_centered,
)

OPS = [rmsprop]
