"""rnn (Paddle 3's cuDNN-style op, what paddle.nn.LSTM / GRU / SimpleRNN save in static mode): a
stack of LSTM, GRU or simple RNN layers, optionally bidirectional, over a time-major batch
[T, N, I], the whole time loop in one kernel.

WeightList holds, as Paddle's RNNBase flattens it, every weight first and then every bias, per
layer and per direction (forward, then reverse): [w_ih, w_hh] * (layers * directions) +
[b_ih, b_hh] * (layers * directions); w_ih is [gates * H, input of the layer], w_hh
[gates * H, H], the biases [gates * H]. Gates: LSTM i, f, c~, o; GRU r, z, c~ (the reset gate
applied to W_hh h + b_hh); simple RNN one. SequenceLength (optional, [N]) ends each sequence:
steps past its length output zeros and leave the state as it was (the reverse direction starts
at the sequence's last step)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name

from ._common import at_least, describe, in_range

FLOATS = ("float32", "float64")
MODES = ("LSTM", "GRU", "RNN_RELU", "RNN_TANH")
GATES = {"LSTM": 4, "GRU": 3, "RNN_RELU": 1, "RNN_TANH": 1}
# Columns per hidden unit of a step's row in Reserve: the gates, then what the gradient needs
# besides (LSTM: c and h; GRU: W_hh h + b_hh of the candidate, and h; simple RNN: h).
RESERVE_WIDTH = {"LSTM": 6, "GRU": 5, "RNN_RELU": 2, "RNN_TANH": 2}


def weight_shapes(mode, input_size, hidden_size, num_layers, bidirec):
    """The shapes WeightList must have, in its order."""
    g, h, dirs = GATES[mode] * hidden_size, hidden_size, 2 if bidirec else 1
    weights, biases = [], []
    for layer in range(num_layers):
        width = input_size if layer == 0 else dirs * h
        for _ in range(dirs):
            weights += [(g, width), (g, h)]
            biases += [(g,), (g,)]
    return weights + biases


def _infer_rnn(ctx):
    x = ctx.input("Input")
    mode, h, layers = ctx.attr("mode"), ctx.attr("hidden_size"), ctx.attr("num_layers")
    bidirec, isize = ctx.attr("is_bidirec"), ctx.attr("input_size")
    dirs = 2 if bidirec else 1
    if x.rank != 3:
        ctx.fail(f"{describe('Input', x)} must be time-major [T, N, input_size]",
                 expected="rank 3", found=f"shape {list(x.shape)}")
    if x.shape[2] not in (isize, -1):
        ctx.fail(f"{describe('Input', x)} has {x.shape[2]} features, attribute input_size is "
                 f"{isize}", expected=f"Input[2] == {isize}", found=f"{list(x.shape)}")
    steps, batch = x.shape[0], x.shape[1]
    states = ctx.inputs("PreState")
    want = 2 if mode == "LSTM" else 1
    if len(states) != want:
        names = "h0, c0" if want == 2 else "h0"
        ctx.fail(f"PreState of mode {mode} holds {want} tensor(s) ({names})",
                 expected=f"{want} tensors", found=f"{len(states)}")
    for i, s in enumerate(states):
        shape = [layers * dirs, batch, h]
        if s.rank != 3 or not all(d == w or d < 0 or w < 0 for d, w in zip(s.shape, shape)):
            ctx.fail(f"PreState[{i}] ({s.name}) must be [num_layers * directions, N, "
                     f"hidden_size]", expected=f"{shape}", found=f"{list(s.shape)}")
        if s.dtype != x.dtype:
            ctx.fail(f"PreState[{i}] ({s.name}) has dtype {s.dtype}, Input {x.dtype}",
                     expected=x.dtype, found=s.dtype)
    shapes = weight_shapes(mode, isize, h, layers, bidirec)
    weights = ctx.inputs("WeightList")
    if len(weights) != len(shapes):
        ctx.fail(f"WeightList of {layers} layer(s), {dirs} direction(s) holds {len(shapes)} "
                 f"tensors (weights, then biases)", expected=f"{len(shapes)} tensors",
                 found=f"{len(weights)}")
    for i, (w, shape) in enumerate(zip(weights, shapes)):
        if tuple(w.shape) != shape or w.dtype != x.dtype:
            ctx.fail(f"WeightList[{i}] ({w.name}) of mode {mode}, input_size {isize}, "
                     f"hidden_size {h} must be {list(shape)} {x.dtype}",
                     expected=f"{list(shape)} {x.dtype}", found=f"{list(w.shape)} {w.dtype}")
    if ctx.has_input("SequenceLength"):
        s = ctx.input("SequenceLength")
        if s.rank != 1 or s.shape[0] not in (batch, -1) or s.dtype not in ("int32", "int64"):
            ctx.fail(f"{describe('SequenceLength', s)} must be [N] int32 (one length per "
                     f"sequence)", expected=f"[{batch}] int32", found=f"{list(s.shape)} "
                     f"{s.dtype}")
    ctx.set_output("Out", (steps, batch, dirs * h), x.dtype)
    ctx.set_output("DropoutState", (steps, batch, dirs * h), "uint8")
    ctx.set_output("Reserve", (layers * dirs, steps, batch, RESERVE_WIDTH[mode] * h), x.dtype)
    for i in range(min(len(states), ctx.num_outputs("State"))):
        ctx.set_output("State", (layers * dirs, batch, h), x.dtype, index=i)


rnn = OpDef(
    "rnn",
    inputs=[
        In("Input", "[T, N, input_size] time-major", dtypes=FLOATS),
        In("PreState", "[h0] or, for LSTM, [h0, c0]; each [num_layers * directions, N, "
           "hidden_size]", duplicable=True, dtypes=FLOATS),
        In("WeightList", "all w_ih, w_hh, then all b_ih, b_hh, per layer and direction",
           duplicable=True, dtypes=FLOATS),
        In("SequenceLength", "[N] int32 lengths: later steps output zeros, keep the state",
           optional=True, dtypes=("int32", "int64")),
    ],
    outputs=[
        Out("Out", "[T, N, directions * hidden_size] the last layer's h of every step"),
        Out("DropoutState", "[T, N, directions * hidden_size] uint8: the dropout mask "
            "between layers (1 kept), ones when nothing is dropped", optional=True),
        Out("Reserve", "[num_layers * directions, T, N, width * hidden_size] what the "
            "gradient reads: per step the activated gates and the states", intermediate=True),
        Out("State", "[h_n] or [h_n, c_n], shaped as PreState", duplicable=True),
    ],
    attrs=[
        Attr("dropout_prob", "float", 0.0, "dropout between layers (not is_test)",
             check=in_range(0.0, 1.0)),
        Attr("is_bidirec", "bool", False, "a reverse direction too, concatenated"),
        Attr("input_size", "int", 10, "features of Input", check=at_least(1)),
        Attr("hidden_size", "int", 100, "hidden units per direction", check=at_least(1)),
        Attr("num_layers", "int", 1, "stacked layers", check=at_least(1)),
        Attr("mode", "string", "RNN_TANH", "the cell", choices=MODES),
        Attr("seed", "int", 0, "the dropout mask's seed (0: the program's stream)"),
        Attr("is_test", "bool", False, "inference: no dropout"),
    ],
    infer=_infer_rnn,
    doc="Per layer and direction, per step t (reverse: from the end): LSTM i, f, o = "
        "sigmoid, c~ = tanh of x W_ih^T + b_ih + h W_hh^T + b_hh, c = f c' + i c~, h = o "
        "tanh(c); GRU r, z = sigmoid(x W_ih^T + b_ih + h' W_hh^T + b_hh), c~ = tanh(x W_ic^T "
        "+ b_ic + r (h' W_hc^T + b_hc)), h = z h' + (1 - z) c~; RNN h = act(x W_ih^T + b_ih + "
        "h' W_hh^T + b_hh). A layer's input is the previous layer's Out (both directions), "
        "dropped out (upscaled) when dropout_prob > 0 and not is_test.",
)

GRAD_INPUTS = ("Input", "PreState", "WeightList", "SequenceLength", "Out", "DropoutState",
               "Reserve")


def _infer_rnn_grad(ctx):
    for slot in ("Input", "PreState", "WeightList"):
        if not ctx.has_output(grad_name(slot)):
            continue
        for i, meta in enumerate(ctx.inputs(slot)[:ctx.num_outputs(grad_name(slot))]):
            ctx.set_output_like(grad_name(slot), meta, index=i)


rnn_grad = OpDef(
    "rnn_grad",
    inputs=[In(s.name, f"the forward {s.name}", duplicable=s.duplicable,
               optional=s.optional) for s in rnn.inputs]
    + [In(s, f"the forward {s}", optional=s == "DropoutState")
       for s in ("Out", "DropoutState", "Reserve")]
    + [In("Out@GRAD", "the gradient of Out (may have no value: zeros)", optional=True),
       In("State@GRAD", "the gradients of State (entries may have no value: zeros)",
          duplicable=True, optional=True)],
    outputs=[Out(grad_name(s), f"the gradient of {s}", duplicable=s != "Input", optional=True)
             for s in ("Input", "PreState", "WeightList")],
    attrs=list(rnn.attrs.values()),
    infer=_infer_rnn_grad,
    differentiable=False,
    doc="Gradient of rnn: back through the layers and steps, last first, in one kernel; the "
        "weights' gradients one GEMM per layer and direction over all steps.",
)


def _rnn_grad_maker(ctx):
    outs = {grad_name(s): ctx.input_grad(s) for s in ("Input", "PreState", "WeightList")
            if ctx.wants(s)}
    if not outs:
        return []
    ins = {s: ctx.input(s) for s in ("Input", "PreState", "WeightList", "SequenceLength")
           if ctx.input(s)}
    ins.update({s: ctx.output(s) for s in ("Out", "DropoutState", "Reserve") if ctx.output(s)})
    ins["Out@GRAD"] = ctx.output_grad("Out")
    ins["State@GRAD"] = ctx.output_grad("State")
    return [GradOp("rnn_grad", ins, outs, dict(ctx.attrs))]


rnn.grad = _rnn_grad_maker

OPS = [rnn, rnn_grad]
