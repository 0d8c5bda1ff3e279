"""momentum: SGD with (Nesterov) momentum and optional built-in L2 decay."""
from headrace.ops import Attr

from ._common import (State, at_least, master_slots, multi_precision_attr, optimizer_op,
                      refuse_master)

momentum = optimizer_op(
    "momentum",
    "g = rescale_grad * Grad (+ regularization_coeff * Param when regularization_method is "
    "'l2_decay'); "
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
        multi_precision_attr(),
        # Paddle's CPU kernel skips it (its GPU kernel applies it); its optimizers write 1.0.
        Attr("rescale_grad", "float", 1.0, "Grad is multiplied by it first"),
    ],
    extra_check=refuse_master, extra_inputs=master_slots()[0],
    extra_outputs=master_slots()[1],
)

OPS = [momentum]
