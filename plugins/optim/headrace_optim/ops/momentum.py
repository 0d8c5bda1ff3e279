"""momentum: SGD with (Nesterov) momentum and optional built-in L2 decay."""
from headrace.ops import Attr

from ._common import State, at_least, optimizer_op

momentum = optimizer_op(
    "momentum",
    "g = Grad + regularization_coeff * Param when regularization_method is 'l2_decay'; "
    "VelocityOut = mu * Velocity + g; ParamOut = Param - LearningRate * (g + mu * VelocityOut) "
    "with use_nesterov, else Param - LearningRate * VelocityOut.",
    states=[State("Velocity", "the velocity, shape of Param")],
    attrs=[
        Attr("mu", "float", doc="momentum coefficient", check=at_least(0.0)),
        Attr("use_nesterov", "bool", False, "use Nesterov momentum"),
        Attr("regularization_method", "string", "", "'' (none) or 'l2_decay' applied to Grad "
             "inside the op", choices=["", "l2_decay"]),
        Attr("regularization_coeff", "float", 0.0, "L2 decay coefficient",
             check=at_least(0.0)),
    ],
)

OPS = [momentum]
