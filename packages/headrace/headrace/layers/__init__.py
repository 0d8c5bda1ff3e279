"""Layer functions: build a network by calling them inside ``program_guard``.

Every layer appends ops to the default main program (parameters also go to the default startup
program, with their initializer ops) and returns its output Variable(s). Modules: ``io`` (data),
``nn`` (layers with parameters, pooling, dropout, softmax), ``ops`` (math and activations),
``loss``, ``metric``, ``tensor`` (constants, copies, shapes), ``control_flow`` (loops, counters,
comparisons, tensor arrays), ``conditional`` (cond, case, Switch, IfElse), ``rnn``
(StaticRNN, DynamicRNN), ``recurrent`` (whole LSTM/GRU/RNN stacks as one op), ``lod_array``
(rank tables, sequences as time steps), ``sequence`` (pooling, convolution, reshaping,
reversing, masks, expanding over LoD batches), ``manip`` (expand, pad, label smoothing,
random tensors; shapes given at run time), ``learning_rate_scheduler``, ``debug`` (Print).
"""
from . import (conditional, control_flow, debug, io, learning_rate_scheduler, lod_array, loss,
               manip, metric, nn, ops, recurrent, rnn, sequence, tensor)
from .debug import Print
from .conditional import IfElse, Switch, case, cond, switch_case
from .rnn import DynamicRNN, StaticRNN, gru_unit, lstm_unit
from .recurrent import lstm, rnn_layer
from .control_flow import (While, array_length, array_read, array_write, create_array, equal,
                           greater_equal, greater_than, increment, less_equal, less_than,
                           logical_and, logical_not, logical_or, logical_xor, not_equal,
                           while_loop)
from .io import data
from .lod_array import (array_to_lod_tensor, lod_rank_table, lod_tensor_to_array,
                        max_sequence_len, reorder_lod_tensor_by_rank, shrink_memory,
                        tensor_array_to_tensor)
from .learning_rate_scheduler import (autoincreased_step_counter, cosine_decay,
                                      exponential_decay, inverse_time_decay, linear_lr_warmup,
                                      natural_exp_decay, noam_decay, piecewise_decay,
                                      polynomial_decay)
from .loss import cross_entropy, mse, mse_loss, softmax_with_cross_entropy, square_error_cost
from .metric import accuracy, topk
from .nn import (batch_norm, conv2d, dropout, dynamic_gru, dynamic_lstm, dynamic_lstmp,
                 embedding, fc, group_norm, instance_norm, l2_normalize, layer_norm, pool2d,
                 softmax)
from .sequence import (lod_append, lod_reset, sequence_concat, sequence_conv, sequence_enumerate,
                       sequence_expand, sequence_expand_as, sequence_first_step,
                       sequence_last_step, sequence_mask, sequence_pad, sequence_pool,
                       sequence_reshape, sequence_reverse, sequence_scatter, sequence_slice,
                       sequence_softmax, sequence_unpad)
from .ops import (abs, ceil, cos, elementwise_add, elementwise_div, elementwise_max,
                  elementwise_min, elementwise_mul, elementwise_pow, elementwise_sub, elu, exp,
                  floor, gelu, hard_sigmoid, leaky_relu, log, matmul, mean, mul, reciprocal,
                  reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum, relu, relu6,
                  round, rsqrt, scale, sigmoid, silu, sin, softplus, softsign, sqrt, square,
                  swish, tanh)
from .ops import clip, cumsum
from .tensor import (assign, cast, concat, create_global_var, create_parameter, create_tensor,
                     fill_constant, fill_constant_batch_size_like, ones, reshape, split, sums,
                     transpose, unstack, zeros, zeros_like)
from .tensor import argmax, argmin, gather, gather_nd, one_hot, scatter, where
from .tensor import shape, slice, squeeze, stack, strided_slice, unsqueeze
from .manip import expand, expand_as, gaussian_random, label_smooth, pad, uniform_random

__all__ = [
    # modules
    "conditional", "control_flow", "debug", "io", "learning_rate_scheduler", "lod_array", "loss",
    "manip", "metric", "nn", "ops", "recurrent", "rnn", "sequence", "tensor",
    # io
    "data",
    # nn
    "fc", "embedding", "conv2d", "pool2d", "batch_norm", "dropout", "softmax", "dynamic_lstm",
    "dynamic_lstmp", "dynamic_gru", "layer_norm", "l2_normalize", "group_norm", "instance_norm",
    # sequence
    "sequence_reverse", "sequence_softmax", "sequence_pool", "sequence_first_step",
    "sequence_last_step", "sequence_mask", "sequence_expand", "sequence_pad", "sequence_unpad",
    "sequence_expand_as", "sequence_slice", "lod_reset", "lod_append", "sequence_conv",
    "sequence_concat", "sequence_reshape", "sequence_enumerate", "sequence_scatter",
    # ops
    "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
    "elementwise_max", "elementwise_min", "elementwise_pow", "relu", "sigmoid", "tanh", "exp",
    "log", "sqrt", "rsqrt", "square", "abs", "ceil", "floor", "round", "reciprocal", "sin",
    "cos", "softsign", "silu", "softplus", "leaky_relu", "relu6", "elu", "gelu", "swish",
    "hard_sigmoid", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
    "mean", "mul", "matmul", "scale", "cumsum", "clip",
    # loss, metric
    "cross_entropy", "softmax_with_cross_entropy", "square_error_cost", "mse", "mse_loss",
    "topk", "accuracy",
    # tensor
    "fill_constant", "fill_constant_batch_size_like", "zeros", "ones", "zeros_like", "assign",
    "sums", "create_tensor",
    "create_parameter", "create_global_var", "cast", "concat", "reshape", "transpose", "split",
    "unstack",
    "gather", "gather_nd", "scatter", "where", "argmax", "argmin", "one_hot",
    "stack", "shape", "squeeze", "unsqueeze", "slice", "strided_slice",
    # manip
    "expand", "expand_as", "pad", "label_smooth", "uniform_random", "gaussian_random",
    # control_flow
    "increment", "less_than", "less_equal", "greater_than", "greater_equal", "equal",
    "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "create_array",
    "array_write", "array_read", "array_length", "While", "while_loop",
    # conditional
    "cond", "case", "switch_case", "Switch", "IfElse",
    # rnn, lod_array
    "StaticRNN", "DynamicRNN", "lstm_unit", "gru_unit", "lod_rank_table", "max_sequence_len",
    "lod_tensor_to_array", "array_to_lod_tensor", "shrink_memory", "reorder_lod_tensor_by_rank",
    "tensor_array_to_tensor",
    # recurrent (the rnn op)
    "lstm", "rnn_layer",
    # learning_rate_scheduler
    "autoincreased_step_counter", "exponential_decay", "natural_exp_decay",
    "inverse_time_decay", "polynomial_decay", "piecewise_decay", "cosine_decay", "noam_decay",
    "linear_lr_warmup",
    # debug
    "Print",
]
