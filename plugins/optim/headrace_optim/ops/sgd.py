"""sgd: plain stochastic gradient descent."""
from ._common import optimizer_op

sgd = optimizer_op(
    "sgd",
    "ParamOut = Param - LearningRate * Grad (rows of a selected-rows Grad only).",
)

OPS = [sgd]
