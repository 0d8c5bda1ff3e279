"""rnn's host logic, one copy for kernels/cpu/rnn.pyx and kernels/cuda/rnn.py: the attributes
(mode, stack, dropout and the mask's seeds) and the operands checked by their shapes and dtypes
only, so that the CUDA kernel checks device arrays without copying them; the SequenceLength
values are checked by each device (the CUDA kernel on the device)."""
import numpy as np

__all__ = ["MODES", "GATES", "WIDTH", "RNNAttrs", "stack_operands", "lens_operand",
           "lens_error"]

MODES = {"LSTM": 0, "GRU": 1, "RNN_RELU": 2, "RNN_TANH": 3}
# By mode code: gates per hidden unit, and Reserve's columns per hidden unit (ops/rnn.py
# RESERVE_WIDTH: the gates, then LSTM's c and h, GRU's W_hc h + b_hc and h, simple RNN's h).
GATES = (4, 3, 1, 1)
WIDTH = (6, 5, 2, 2)
_U64 = 0xFFFFFFFFFFFFFFFF


class RNNAttrs:
    """rnn's attributes as both kernels read them."""

    def __init__(self, attrs, info=None):
        self.mode = MODES[attrs["mode"]]
        self.layers, self.hid = attrs["num_layers"], attrs["hidden_size"]
        self.isize = attrs["input_size"]
        self.dirs = 2 if attrs["is_bidirec"] else 1
        # Paddle's attribute is float32, the mask compares against it as such
        self.p = float(np.float32(attrs["dropout_prob"]))
        self.is_test = attrs["is_test"]
        # Paddle: a nonzero seed attribute draws the same mask on every run; else the
        # program's stream (info.seed, derived from random_seed) or an unseeded one.
        own = attrs.get("seed", 0)
        self.seed = int(own) & _U64 if own else None
        info_seed = getattr(info, "seed", None) if info is not None else None
        self.stream_seed = None if info_seed is None else int(info_seed) & _U64


def stack_operands(op, a, x, states, weights, checked):
    """(x, T, N, states, [(w_ih, w_hh, b_ih, b_hh)] per layer and direction) of the stack
    ``a`` (an RNNAttrs or an object with its fields), each operand passed through
    ``checked(value, dtype, shape, op, slot)``: the device's converter, which raises on a
    wrong dtype or shape."""
    if str(x.dtype) not in ("float32", "float64"):
        raise TypeError(f"{op}: Input has dtype {x.dtype}, expected float32 or float64")
    if x.ndim != 3:
        raise ValueError(f"{op}: Input must be [T, N, input_size], found {list(x.shape)}")
    dtype, (T, N) = x.dtype, x.shape[:2]
    L, D, H, G = a.layers, a.dirs, a.hid, GATES[a.mode]
    x = checked(x, dtype, x.shape, op, "Input")
    want = 2 if a.mode == 0 else 1
    states = list(states or ())
    if len(states) != want:
        raise ValueError(f"{op}: PreState of mode {list(MODES)[a.mode]} holds {want} "
                         f"tensors, found {len(states)}")
    states = [checked(s, dtype, (L * D, N, H), op, f"PreState[{i}]")
              for i, s in enumerate(states)]
    weights = list(weights or ())
    if len(weights) != 4 * L * D:
        raise ValueError(f"{op}: WeightList must hold {4 * L * D} tensors, found "
                         f"{len(weights)}")
    ws = []
    for k in range(L * D):
        width = x.shape[2] if k < D else D * H
        ws.append(tuple(checked(weights[i], dtype, shape, op, f"WeightList[{i}]")
                        for i, shape in ((2 * k, (G * H, width)), (2 * k + 1, (G * H, H)),
                                         (2 * L * D + 2 * k, (G * H,)),
                                         (2 * L * D + 2 * k + 1, (G * H,)))))
    return x, T, N, states, ws


def lens_operand(op, lens, N):
    """SequenceLength's check by shape and dtype (``lens``: a host or device array)."""
    if str(lens.dtype) not in ("int32", "int64") or tuple(lens.shape) != (N,):
        raise TypeError(f"{op}: SequenceLength must be [{N}] int32, found "
                        f"{list(lens.shape)} {lens.dtype}")
    return lens


def lens_error(op, T, found):
    """The error for SequenceLength values outside [0, T] (``found`` says which)."""
    return ValueError(f"{op}: SequenceLength values must be in [0, {T}] (the steps of "
                      f"Input), found {found}")
