"""gru_unit: one GRU step (Fluid's gru_unit): the gates from Input (the input projection),
HiddenPrev and Weight (gru's memory layout: [D, 2D] update/reset, then [D, D] candidate); the
activations are Paddle's integer codes (0 identity, 1 sigmoid, 2 tanh, 3 relu)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name

from ._common import describe

FLOATS = ("float32", "float64")
CODES = (0, 1, 2, 3)


def _infer_gru_unit(ctx):
    x, h, w = ctx.input("Input"), ctx.input("HiddenPrev"), ctx.input("Weight")
    d = w.shape[0]
    if list(w.shape) != [d, 3 * d] or x.rank != 2 or x.shape[1] not in (3 * d, -1) or \
            h.rank != 2 or h.shape[1] not in (d, -1):
        ctx.fail(f"{describe('Input', x)}, {describe('HiddenPrev', h)} and "
                 f"{describe('Weight', w)} must be [N, 3D], [N, D] and [D, 3D]",
                 expected="Input [N, 3D], HiddenPrev [N, D], Weight [D, 3D]",
                 found=f"{list(x.shape)}, {list(h.shape)}, {list(w.shape)}")
    if ctx.has_input("Bias") and list(ctx.input("Bias").shape) != [1, 3 * d]:
        ctx.fail(f"{describe('Bias', ctx.input('Bias'))} must be [1, 3D]",
                 expected=f"[1, {3 * d}]", found=f"{list(ctx.input('Bias').shape)}")
    n = x.shape[0]
    ctx.set_output("Gate", (n, 3 * d), x.dtype)
    ctx.set_output("ResetHiddenPrev", (n, d), x.dtype)
    ctx.set_output("Hidden", (n, d), x.dtype)


gru_unit = OpDef(
    "gru_unit",
    inputs=[In("Input", "[N, 3D] the step's input projections [u, r, c]", dtypes=FLOATS),
            In("HiddenPrev", "[N, D] the previous hidden state", dtypes=FLOATS),
            In("Weight", "[D, 3D] in memory: [D, 2D] update/reset, then [D, D] candidate",
               dtypes=FLOATS),
            In("Bias", "[1, 3D]", optional=True, dtypes=FLOATS)],
    outputs=[Out("Gate", "[N, 3D] the activated u, r, c", intermediate=True),
             Out("ResetHiddenPrev", "[N, D] r * HiddenPrev", intermediate=True),
             Out("Hidden", "[N, D] the new hidden state")],
    attrs=[Attr("activation", "int", 2, "the candidate's (0 identity, 1 sigmoid, 2 tanh, "
                "3 relu)", choices=CODES),
           Attr("gate_activation", "int", 1, "the gates' (codes as activation)", choices=CODES),
           Attr("origin_mode", "bool", False, "h = u h' + (1 - u) c instead of (1 - u) h' + "
                "u c")],
    infer=_infer_gru_unit,
    doc="u, r = act_g(Input_ur + Bias_ur + h' W_ur); c = act(Input_c + Bias_c + (r h') W_c); "
        "Hidden = (1 - u) h' + u c (origin_mode: u h' + (1 - u) c).",
)

GRADS = ("Input", "HiddenPrev", "Weight", "Bias")


def _infer_gru_unit_grad(ctx):
    for slot in GRADS:
        if ctx.has_output(grad_name(slot)) and ctx.has_input(slot):
            ctx.set_output_like(grad_name(slot), ctx.input(slot))


gru_unit_grad = OpDef(
    "gru_unit_grad",
    inputs=[In(s, f"the forward {s}", optional=s == "Bias") for s in GRADS]
    + [In("Gate", "the forward Gate"), In("ResetHiddenPrev", "the forward ResetHiddenPrev"),
       In("Hidden@GRAD", "the gradient of Hidden")],
    outputs=[Out(grad_name(s), f"the gradient of {s}", optional=True) for s in GRADS],
    attrs=list(gru_unit.attrs.values()),
    infer=_infer_gru_unit_grad,
    differentiable=False,
    doc="Gradient of gru_unit.",
)


def _grad(ctx):
    outs = {grad_name(s): ctx.input_grad(s) for s in GRADS if ctx.input(s) and ctx.wants(s)}
    if not outs:
        return []
    ins = {s: ctx.input(s) for s in GRADS if ctx.input(s)}
    ins.update(Gate=ctx.output("Gate"), ResetHiddenPrev=ctx.output("ResetHiddenPrev"))
    ins["Hidden@GRAD"] = ctx.output_grad("Hidden")
    return [GradOp("gru_unit_grad", ins, outs, dict(ctx.attrs))]


gru_unit.grad = _grad

OPS = [gru_unit, gru_unit_grad]
