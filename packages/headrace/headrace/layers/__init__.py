"""Layer functions: build a network by calling them inside ``program_guard``.

Every layer appends ops to the default main program (parameters also to the default startup
program, with their initializer ops) and returns its output Variable(s).
"""
from .io import (data)
from .nn import (fc, embedding, conv2d, pool2d, batch_norm, dropout, softmax)
from .ops import (elementwise_add, elementwise_sub, elementwise_mul, elementwise_div, elementwise_max,
    elementwise_min, elementwise_pow, relu, sigmoid, tanh, exp, log, sqrt, rsqrt, square, abs,
    ceil, floor, round, reciprocal, sin, cos, softsign, silu, softplus, leaky_relu, relu6,
    elu, gelu, swish, hard_sigmoid, reduce_sum, reduce_mean, reduce_max, reduce_min,
    reduce_prod, mean, mul, matmul, scale)
from .loss import (cross_entropy, softmax_with_cross_entropy, square_error_cost)
from .metric import (topk, accuracy)
from .tensor import (fill_constant, zeros, ones, zeros_like, assign, sums, create_tensor, create_parameter,
    create_global_var, cast, concat, reshape, transpose, split)
from .control_flow import (increment, less_than, less_equal, greater_than, greater_equal, equal, not_equal,
    logical_and, logical_or, logical_xor, logical_not, create_array, array_write, array_read)
from .learning_rate_scheduler import (autoincreased_step_counter, exponential_decay, natural_exp_decay, inverse_time_decay,
    polynomial_decay, piecewise_decay, cosine_decay, noam_decay, linear_lr_warmup)
from . import io, nn, ops, loss, metric, tensor, control_flow, learning_rate_scheduler

__all__ = [
    'data', 'fc', 'embedding', 'conv2d', 'pool2d', 'batch_norm', 'dropout', 'softmax',
    'elementwise_add', 'elementwise_sub', 'elementwise_mul', 'elementwise_div',
    'elementwise_max', 'elementwise_min', 'elementwise_pow', 'relu', 'sigmoid', 'tanh', 'exp',
    'log', 'sqrt', 'rsqrt', 'square', 'abs', 'ceil', 'floor', 'round', 'reciprocal', 'sin',
    'cos', 'softsign', 'silu', 'softplus', 'leaky_relu', 'relu6', 'elu', 'gelu', 'swish',
    'hard_sigmoid', 'reduce_sum', 'reduce_mean', 'reduce_max', 'reduce_min', 'reduce_prod',
    'mean', 'mul', 'matmul', 'scale', 'cross_entropy', 'softmax_with_cross_entropy',
    'square_error_cost', 'topk', 'accuracy', 'fill_constant', 'zeros', 'ones', 'zeros_like',
    'assign', 'sums', 'create_tensor', 'create_parameter', 'create_global_var', 'cast',
    'concat', 'reshape', 'transpose', 'split', 'increment', 'less_than', 'less_equal',
    'greater_than', 'greater_equal', 'equal', 'not_equal', 'logical_and', 'logical_or',
    'logical_xor', 'logical_not', 'create_array', 'array_write', 'array_read',
    'autoincreased_step_counter', 'exponential_decay', 'natural_exp_decay',
    'inverse_time_decay', 'polynomial_decay', 'piecewise_decay', 'cosine_decay', 'noam_decay',
    'linear_lr_warmup', 'io', 'nn', 'ops', 'loss', 'metric', 'tensor', 'control_flow',
    'learning_rate_scheduler'
]
