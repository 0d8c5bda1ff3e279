"""gru (Fluid's dynamic_gru): a GRU over a batch of LoD sequences, the whole time loop in one
kernel. Input is the input projection of every step in the gate layout [update, reset,
candidate]; Weight holds, in its memory, the [D, 2D] update/reset weights followed by the
[D, D] candidate weights (Paddle's layout, though its shape reads [D, 3D]). The reset gate
applies to h before the candidate's product, (r * h) W_c, unlike PyTorch's nn.GRU."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name

from ._common import describe

ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")
FLOATS = ("float32", "float64")
KEPT = ("BatchGate", "BatchResetHiddenPrev", "BatchHidden")


def _infer_gru(ctx):
    x, w = ctx.input("Input"), ctx.input("Weight")
    if x.rank != 2 or (x.shape[1] >= 0 and x.shape[1] % 3):
        ctx.fail(f"{describe('Input', x)} must be [rows, 3 * hidden] (the three gates' input "
                 f"projections)", expected="rank 2, columns a multiple of 3",
                 found=f"shape {list(x.shape)}")
    d = x.shape[1] // 3 if x.shape[1] >= 0 else w.shape[0]
    if list(w.shape) != [d, 3 * d]:
        ctx.fail(f"{describe('Weight', w)} must be [hidden, 3 * hidden]",
                 expected=f"[{d}, {3 * d}]", found=f"{list(w.shape)}")
    if ctx.has_input("Bias"):
        b = ctx.input("Bias")
        if list(b.shape) != [1, 3 * d]:
            ctx.fail(f"{describe('Bias', b)} must be [1, 3 * hidden]", expected=f"[1, {3 * d}]",
                     found=f"{list(b.shape)}")
    if ctx.has_input("H0"):
        h0 = ctx.input("H0")
        if h0.rank != 2 or h0.shape[1] not in (d, -1):
            ctx.fail(f"{describe('H0', h0)} must be [sequences, hidden]",
                     expected=f"[-1, {d}]", found=f"{list(h0.shape)}")
    rows = x.shape[0]
    ctx.set_output("Hidden", (rows, d), x.dtype, x.lod_level)
    ctx.set_output("BatchGate", (rows, 3 * d), x.dtype, x.lod_level)
    ctx.set_output("BatchResetHiddenPrev", (rows, d), x.dtype, x.lod_level)
    ctx.set_output("BatchHidden", (rows, d), x.dtype, x.lod_level)


gru = OpDef(
    "gru",
    inputs=[
        In("Input", "[rows, 3D] input projections of every step (LoD: the sequences)",
           dtypes=FLOATS),
        In("H0", "[sequences, D] initial hidden states (default zeros)", optional=True,
           dtypes=FLOATS),
        In("Weight", "[D, 3D]: the [D, 2D] update/reset weights, then the [D, D] candidate "
           "weights, in memory order", dtypes=FLOATS),
        In("Bias", "[1, 3D] {b_u, b_r, b_c}", optional=True, dtypes=FLOATS),
    ],
    outputs=[
        Out("BatchGate", "[rows, 3D] the activated gates, step-major (for the gradient)",
            intermediate=True),
        Out("BatchResetHiddenPrev", "[rows, D] r * h of the step before, step-major",
            intermediate=True),
        Out("BatchHidden", "[rows, D] h, step-major", intermediate=True),
        Out("Hidden", "[rows, D] h of every step, Input's LoD"),
    ],
    attrs=[
        Attr("activation", "string", "tanh", "the candidate's activation", choices=ACTIVATIONS),
        Attr("gate_activation", "string", "sigmoid", "the update and reset gates'",
             choices=ACTIVATIONS),
        Attr("is_reverse", "bool", False, "run each sequence from its end"),
        Attr("origin_mode", "bool", False, "h = u h' + (1 - u) c (the original paper's) "
             "instead of h = (1 - u) h' + u c"),
    ],
    infer=_infer_gru,
    doc="Per sequence and step: u = act_g(x_u + h' W_u + b_u), r = act_g(x_r + h' W_r + b_r), "
        "c = act(x_c + (r h') W_c + b_c), h = (1 - u) h' + u c (origin_mode: u h' + (1 - u) "
        "c); h' is the step before's h, H0 or zeros at the start.",
)


def _infer_gru_grad(ctx):
    for slot in ("Input", "H0", "Weight", "Bias"):
        if ctx.has_output(grad_name(slot)) and ctx.has_input(slot):
            ctx.set_output_like(grad_name(slot), ctx.input(slot))


gru_grad = OpDef(
    "gru_grad",
    inputs=[In(s, f"the forward {s}", optional=s in ("H0", "Bias"))
            for s in ("Input", "H0", "Weight", "Bias") + KEPT + ("Hidden",)]
    + [In("Hidden@GRAD", "the gradient of Hidden (may have no value: zeros)", optional=True)],
    outputs=[Out(grad_name(s), f"the gradient of {s}", optional=True)
             for s in ("Input", "H0", "Weight", "Bias")],
    attrs=list(gru.attrs.values()),
    infer=_infer_gru_grad,
    differentiable=False,
    doc="Gradient of gru: back through the steps, last first, in one kernel.",
)


def _gru_grad_maker(ctx):
    outs = {grad_name(s): ctx.input_grad(s) for s in ("Input", "H0", "Weight", "Bias")
            if ctx.input(s) and ctx.wants(s)}
    if not outs:
        return []
    ins = {s: ctx.input(s) for s in ("Input", "H0", "Weight", "Bias") if ctx.input(s)}
    ins.update({s: ctx.output(s) for s in KEPT + ("Hidden",)})
    ins["Hidden@GRAD"] = ctx.output_grad("Hidden")
    return [GradOp("gru_grad", ins, outs, dict(ctx.attrs))]


gru.grad = _gru_grad_maker

OPS = [gru, gru_grad]
