"""lstm (Fluid's dynamic_lstm): an LSTM over a batch of LoD sequences, the whole time loop in
one kernel. Input is the input projection of every step, computed before (by an fc), in
Paddle's gate layout [candidate, input, forget, output]; Weight is the recurrent projection,
Bias the gate biases and, with peepholes, the diagonal peephole weights."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name

from ._common import describe

ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")
FLOATS = ("float32", "float64")


def _infer_lstm(ctx):
    x, w, b = ctx.input("Input"), ctx.input("Weight"), ctx.input("Bias")
    if x.rank != 2 or (x.shape[1] >= 0 and x.shape[1] % 4):
        ctx.fail(f"{describe('Input', x)} must be [rows, 4 * hidden] (the four gates' input "
                 f"projections)", expected="rank 2, columns a multiple of 4",
                 found=f"shape {list(x.shape)}")
    d = x.shape[1] // 4 if x.shape[1] >= 0 else w.shape[0]
    if list(w.shape) != [d, 4 * d]:
        ctx.fail(f"{describe('Weight', w)} must be [hidden, 4 * hidden]",
                 expected=f"[{d}, {4 * d}]", found=f"{list(w.shape)}")
    width = 7 * d if ctx.attr("use_peepholes") else 4 * d
    if list(b.shape) != [1, width]:
        ctx.fail(f"{describe('Bias', b)} must be [1, {width // d} * hidden] (use_peepholes="
                 f"{ctx.attr('use_peepholes')})", expected=f"[1, {width}]",
                 found=f"{list(b.shape)}")
    for slot in ("H0", "C0"):
        if ctx.has_input(slot):
            s = ctx.input(slot)
            if s.rank != 2 or s.shape[1] not in (d, -1):
                ctx.fail(f"{describe(slot, s)} must be [sequences, hidden]",
                         expected=f"[-1, {d}]", found=f"{list(s.shape)}")
    if ctx.has_input("H0") != ctx.has_input("C0"):
        ctx.fail("H0 and C0 are given together or not at all",
                 expected="both or neither", found="only " + ("H0" if ctx.has_input("H0")
                                                               else "C0"))
    rows = x.shape[0]
    for slot in ("Hidden", "Cell", "BatchCellPreAct"):
        ctx.set_output(slot, (rows, d), x.dtype, x.lod_level)
    ctx.set_output("BatchGate", (rows, 4 * d), x.dtype, x.lod_level)


lstm = OpDef(
    "lstm",
    inputs=[
        In("Input", "[rows, 4D] input projections of every step (LoD: the sequences)",
           dtypes=FLOATS),
        In("H0", "[sequences, D] initial hidden states (with C0, or neither: zeros)",
           optional=True, dtypes=FLOATS),
        In("C0", "[sequences, D] initial cell states", optional=True, dtypes=FLOATS),
        In("Weight", "[D, 4D] recurrent weights {W_ch, W_ih, W_fh, W_oh}", dtypes=FLOATS),
        In("Bias", "[1, 4D] {b_c, b_i, b_f, b_o}, or [1, 7D] with the peepholes "
           "{..., W_ic, W_fc, W_oc}", dtypes=FLOATS),
    ],
    outputs=[
        Out("Hidden", "[rows, D] h of every step, Input's LoD"),
        Out("Cell", "[rows, D] c of every step, Input's LoD"),
        Out("BatchGate", "[rows, 4D] the activated gates, in step-major order (for the "
            "gradient)", intermediate=True),
        Out("BatchCellPreAct", "[rows, D] c in step-major order (for the gradient)",
            intermediate=True),
    ],
    attrs=[
        Attr("use_peepholes", "bool", True, "diagonal connections from c to the gates"),
        Attr("is_reverse", "bool", False, "run each sequence from its end"),
        Attr("gate_activation", "string", "sigmoid", "input, forget and output gates",
             choices=ACTIVATIONS),
        Attr("cell_activation", "string", "tanh", "applied to c in h = o * act(c)",
             choices=ACTIVATIONS),
        Attr("candidate_activation", "string", "tanh", "the candidate cell",
             choices=ACTIVATIONS),
    ],
    infer=_infer_lstm,
    doc="Per sequence and step: i = act_g(x_i + W_ih h + W_ic c' + b_i), f = act_g(x_f + "
        "W_fh h + W_fc c' + b_f), g = act_cand(x_c + W_ch h + b_c), c = f c' + i g, o = "
        "act_g(x_o + W_oh h + W_oc c + b_o), h = o act_cell(c) (c', h of the step before; H0, "
        "C0 or zeros at the start; peephole terms only with use_peepholes).",
)


def _infer_lstm_grad(ctx):
    for slot in ("Input", "H0", "C0", "Weight", "Bias"):
        if ctx.has_output(grad_name(slot)) and ctx.has_input(slot):
            ctx.set_output_like(grad_name(slot), ctx.input(slot))


lstm_grad = OpDef(
    "lstm_grad",
    inputs=[In(s, f"the forward {s}", optional=s in ("H0", "C0"))
            for s in ("Input", "H0", "C0", "Weight", "Bias", "Hidden", "Cell", "BatchGate",
                      "BatchCellPreAct")]
    + [In("Hidden@GRAD", "the gradient of Hidden (may have no value: zeros)", optional=True),
       In("Cell@GRAD", "the gradient of Cell (may have no value: zeros)", optional=True)],
    outputs=[Out(grad_name(s), f"the gradient of {s}", optional=True)
             for s in ("Input", "H0", "C0", "Weight", "Bias")],
    attrs=list(lstm.attrs.values()),
    infer=_infer_lstm_grad,
    differentiable=False,
    doc="Gradient of lstm: back through the steps, last first, in one kernel.",
)


def _lstm_grad_maker(ctx):
    outs = {grad_name(s): ctx.input_grad(s) for s in ("Input", "H0", "C0", "Weight", "Bias")
            if ctx.input(s) and ctx.wants(s)}
    if not outs:
        return []
    ins = {s: ctx.input(s) for s in ("Input", "H0", "C0", "Weight", "Bias") if ctx.input(s)}
    ins.update({s: ctx.output(s) for s in ("Hidden", "Cell", "BatchGate", "BatchCellPreAct")})
    ins["Hidden@GRAD"] = ctx.output_grad("Hidden")
    ins["Cell@GRAD"] = ctx.output_grad("Cell")
    return [GradOp("lstm_grad", ins, outs, dict(ctx.attrs))]


lstm.grad = _lstm_grad_maker

OPS = [lstm, lstm_grad]
