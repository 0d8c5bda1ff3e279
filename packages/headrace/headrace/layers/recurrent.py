"""Whole recurrent networks as one ``rnn`` op (Paddle 3's op, what paddle.nn.LSTM / GRU /
SimpleRNN save): ``lstm`` as Fluid's ``fluid.layers.lstm`` (batch-major input, returns the
outputs and the last h and c), and ``rnn_layer`` with paddle.nn.LSTM / GRU / SimpleRNN's
arguments (mode, direction, time_major, sequence_length, initial_states, dropout).

The parameters are created as paddle.nn's RNNBase creates them: per layer and direction
weight_ih [gates * hidden, input], weight_hh [gates * hidden, hidden], bias_ih and bias_hh
[gates * hidden], all U(-1/sqrt(hidden), 1/sqrt(hidden)) by default; the op reads them all
weights first, then all biases.
"""
import copy
import math

from ..checks import check_variable
from ..framework import Variable
from ..initializer import Uniform
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr
from .tensor import fill_constant, fill_constant_batch_size_like, transpose

__all__ = ["lstm", "rnn_layer"]

GATES = {"LSTM": 4, "GRU": 3, "RNN_RELU": 1, "RNN_TANH": 1}
DIRECTIONS = {"forward": 1, "bidirect": 2, "bidirectional": 2}


def _attr_for(attr, suffix):
    """A ParamAttr of one of the layer's parameters: ``attr``'s settings, its name (when
    given) suffixed so that every weight gets its own."""
    if attr is False:
        return False
    attr = copy.copy(ParamAttr._to_attr(attr))
    if attr.name is not None:
        attr.name = f"{attr.name}{suffix}"
    return attr


def _weights(helper, mode, input_size, hidden_size, num_layers, dirs, dtype, attrs, init):
    """WeightList in the op's order (all weights, then all biases)."""
    g = GATES[mode] * hidden_size
    weights, biases = [], []
    for layer in range(num_layers):
        width = input_size if layer == 0 else dirs * hidden_size
        for d in range(dirs):
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            for kind, shape, out in (("weight_ih", [g, width], weights),
                                     ("weight_hh", [g, hidden_size], weights),
                                     ("bias_ih", [g], biases), ("bias_hh", [g], biases)):
                attr = _attr_for(attrs[kind], suffix)
                if attr is False:
                    raise helper.error(f"argument '{kind}_attr' False (no {kind}) is not "
                                       f"supported: the rnn op reads every bias")
                out.append(helper.create_parameter(attr, shape, dtype,
                                                   is_bias=kind.startswith("bias"),
                                                   default_initializer=init))
    return weights + biases


def _zeros(helper, ref, batch_axis, shape, dtype):
    """A zero initial state [layers * directions, batch, hidden]; the batch from ``ref``'s
    ``batch_axis`` at run time when it is unknown here."""
    if ref.shape[batch_axis] is not None and ref.shape[batch_axis] >= 0:
        return fill_constant([shape[0], ref.shape[batch_axis], shape[2]], dtype, 0.0)
    return fill_constant_batch_size_like(ref, [shape[0], -1, shape[2]], dtype, 0.0,
                                         input_dim_idx=batch_axis, output_dim_idx=1)


def _rnn(helper, x, mode, hidden_size, num_layers, dirs, states, sequence_length, dropout,
         is_test, seed, attrs, init):
    """Append the rnn op on time-major ``x``; returns (Out, [h_n(, c_n)])."""
    input_size = x.shape[2]
    if input_size is None or input_size <= 0:
        raise helper.error(f"the input's feature size must be known, found {list(x.shape)}")
    dtype = x.dtype
    weights = _weights(helper, mode, input_size, hidden_size, num_layers, dirs, dtype, attrs,
                       init)
    out = helper.create_variable_for_type_inference(dtype)
    finals = [helper.create_variable_for_type_inference(dtype) for _ in states]
    reserve = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    dropout_state = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
    inputs = {"Input": x, "PreState": list(states), "WeightList": weights}
    if sequence_length is not None:
        inputs["SequenceLength"] = sequence_length
    helper.append_op("rnn", inputs, {"Out": out, "State": finals, "Reserve": reserve,
                                     "DropoutState": dropout_state},
                     {"dropout_prob": float(dropout), "is_bidirec": dirs == 2,
                      "input_size": int(input_size), "hidden_size": int(hidden_size),
                      "num_layers": int(num_layers), "mode": mode, "seed": int(seed),
                      "is_test": bool(is_test)})
    return out, finals


def _check_sizes(helper, hidden_size, num_layers, dropout):
    for arg, v in (("hidden_size", hidden_size), ("num_layers", num_layers)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise helper.error(f"argument '{arg}' must be a positive int, got {v!r}")
    if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
        raise helper.error(f"argument 'dropout' must be in [0, 1], got {dropout!r}")


def lstm(input, init_h, init_c, max_len, hidden_size, num_layers, dropout_prob=0.0,
         is_bidirec=False, is_test=False, name=None, default_initializer=None, seed=-1):
    """Fluid's ``layers.lstm``: a multi-layer (bidirectional) LSTM over ``input`` [batch,
    max_len, input_size]; ``init_h``/``init_c`` [num_layers * directions, batch, hidden_size].
    Returns ``(rnn_out [batch, max_len, directions * hidden_size], last_h, last_c)``. ``seed``
    -1 (Fluid's default) draws the dropout mask from the program's stream."""
    helper = LayerHelper("lstm", name=name)
    check_variable("lstm", "input", input, ("float32", "float64"))
    check_variable("lstm", "init_h", init_h)
    check_variable("lstm", "init_c", init_c)
    _check_sizes(helper, hidden_size, num_layers, dropout_prob)
    if len(input.shape) != 3:
        raise helper.error(f"argument 'input' must be [batch, max_len, input_size], found "
                           f"{list(input.shape)}")
    if not isinstance(max_len, int) or max_len < 1 or \
            input.shape[1] not in (None, -1, max_len):
        raise helper.error(f"argument 'max_len' must be input's steps ({input.shape[1]}), got "
                           f"{max_len!r}")
    init = default_initializer or Uniform(-1 / math.sqrt(hidden_size),
                                          1 / math.sqrt(hidden_size))
    attrs = {k: ParamAttr(name=f"{helper.name}.{k}") for k in
             ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    x = transpose(input, [1, 0, 2])
    out, (last_h, last_c) = _rnn(helper, x, "LSTM", hidden_size, num_layers,
                                 2 if is_bidirec else 1, [init_h, init_c], None, dropout_prob,
                                 is_test, 0 if seed == -1 else seed, attrs, init)
    return transpose(out, [1, 0, 2]), last_h, last_c


def rnn_layer(input, mode, hidden_size, num_layers=1, direction="forward", time_major=False,
              sequence_length=None, initial_states=None, dropout=0.0, is_test=False,
              weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
              seed=0, name=None):
    """paddle.nn.LSTM / GRU / SimpleRNN as a layer function: ``mode`` "LSTM", "GRU",
    "RNN_TANH" or "RNN_RELU"; ``input`` [batch, steps, input_size] ([steps, batch, ...] when
    ``time_major``); ``sequence_length`` an int32/int64 [batch] Variable; ``initial_states``
    h0 (or (h0, c0) for LSTM), each [num_layers * directions, batch, hidden_size], zeros when
    None. Returns ``(outputs, final_states)``: final_states is h_n, or (h_n, c_n) for LSTM."""
    helper = LayerHelper(mode.lower() if isinstance(mode, str) else "rnn_layer", name=name)
    if mode not in GATES:
        raise helper.error(f"argument 'mode' must be one of {list(GATES)}, got {mode!r}")
    if direction not in DIRECTIONS:
        raise helper.error(f"argument 'direction' must be one of {list(DIRECTIONS)}, got "
                           f"{direction!r}")
    check_variable("rnn_layer", "input", input, ("float32", "float64"))
    _check_sizes(helper, hidden_size, num_layers, dropout)
    if len(input.shape) != 3:
        raise helper.error(f"argument 'input' must be rank 3, found {list(input.shape)}")
    dirs, n_states = DIRECTIONS[direction], 2 if mode == "LSTM" else 1
    batch_axis = 1 if time_major else 0
    if initial_states is None:
        shape = [num_layers * dirs, -1, hidden_size]
        states = [_zeros(helper, input, batch_axis, shape, input.dtype)
                  for _ in range(n_states)]
    else:
        states = [initial_states] if isinstance(initial_states, Variable) else \
            list(initial_states)
        if len(states) != n_states or not all(isinstance(s, Variable) for s in states):
            raise helper.error(f"argument 'initial_states' of {mode} must be "
                               f"{'(h0, c0)' if n_states == 2 else 'h0'} Variables, got "
                               f"{initial_states!r}"[:300])
    if sequence_length is not None:
        check_variable("rnn_layer", "sequence_length", sequence_length, ("int32", "int64"))
    h = hidden_size
    init = Uniform(-1 / math.sqrt(h), 1 / math.sqrt(h))
    attrs = {"weight_ih": weight_ih_attr, "weight_hh": weight_hh_attr,
             "bias_ih": bias_ih_attr, "bias_hh": bias_hh_attr}
    x = input if time_major else transpose(input, [1, 0, 2])
    out, finals = _rnn(helper, x, mode, hidden_size, num_layers, dirs, states,
                       sequence_length, dropout, is_test, seed, attrs, init)
    if not time_major:
        out = transpose(out, [1, 0, 2])
    return out, (tuple(finals) if n_states == 2 else finals[0])
