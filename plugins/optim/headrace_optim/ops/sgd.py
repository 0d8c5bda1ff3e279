"""sgd: plain stochastic gradient descent."""
from ._common import master_slots, multi_precision_attr, optimizer_op, refuse_master

sgd = optimizer_op(
    "sgd",
    "ParamOut = Param - LearningRate * Grad (rows of a selected-rows Grad only).",
    attrs=[multi_precision_attr()],
    extra_check=refuse_master, extra_inputs=master_slots()[0], extra_outputs=master_slots()[1],
)

OPS = [sgd]
