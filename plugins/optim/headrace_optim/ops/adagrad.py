"""adagrad: per-element learning rates from the accumulated squared gradient."""
from headrace.ops import Attr

from ._common import State, at_least, optimizer_op

adagrad = optimizer_op(
    "adagrad",
    "MomentOut = Moment + Grad^2; ParamOut = Param - LearningRate Grad / (sqrt(MomentOut) + "
    "epsilon).",
    states=[State("Moment", "accumulated squared gradient, shape of Param")],
    attrs=[Attr("epsilon", "float", 1e-6, "added to the denominator", check=at_least(0.0))],
)

OPS = [adagrad]
