"""lstmp (Fluid's dynamic_lstmp): an LSTM whose recurrent state is a projection of its hidden
state, r = act(h ProjWeight), over a batch of LoD sequences, the whole time loop in one kernel.
Input holds the four gates' input projections (an fc before), in Paddle's gate layout
[candidate, input, forget, output] as lstm's; Weight maps r of the step before to the gates,
ProjWeight h to r; Bias holds the gate biases and, with peepholes, the diagonal peephole
weights. Slots, attributes and numbers are Paddle's lstmp op's (paddle/fluid/operators/
lstmp_op.h), quirks included: see the proj_activation attribute."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name

from ._common import describe

ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")
FLOATS = ("float32", "float64")
WEIGHTS = ("Input", "H0", "C0", "Weight", "ProjWeight", "Bias")
KEPT = ("Projection", "Cell", "BatchGate", "BatchCellPreAct", "BatchHidden")


def _known(*dims):
    return all(d >= 0 for d in dims)


def _infer_lstmp(ctx):
    x, w, pw, b = (ctx.input(s) for s in ("Input", "Weight", "ProjWeight", "Bias"))
    if x.rank != 2 or (x.shape[1] >= 0 and x.shape[1] % 4):
        ctx.fail(f"{describe('Input', x)} must be [rows, 4 * hidden] (the four gates' input "
                 f"projections)", expected="rank 2, columns a multiple of 4",
                 found=f"shape {list(x.shape)}")
    if pw.rank != 2:
        ctx.fail(f"{describe('ProjWeight', pw)} must be [hidden, proj_size]", expected="rank 2",
                 found=f"shape {list(pw.shape)}")
    d = x.shape[1] // 4 if x.shape[1] >= 0 else pw.shape[0]
    p = pw.shape[1]
    if _known(d, pw.shape[0]) and pw.shape[0] != d:
        ctx.fail(f"{describe('ProjWeight', pw)} must be [hidden, proj_size] with hidden = "
                 f"Input's columns / 4", expected=f"[{d}, proj_size]", found=f"{list(pw.shape)}")
    if w.rank != 2 or (_known(p, w.shape[0]) and w.shape[0] != p) or \
            (_known(d, w.shape[1]) and w.shape[1] != 4 * d):
        ctx.fail(f"{describe('Weight', w)} must be [proj_size, 4 * hidden] (from r of the step "
                 f"before to the gates)", expected=f"[{p}, {4 * d}]", found=f"{list(w.shape)}")
    width = 7 * d if ctx.attr("use_peepholes") else 4 * d
    if b.rank != 2 or b.shape[0] not in (1, -1) or (_known(d, b.shape[1]) and
                                                     b.shape[1] != width):
        ctx.fail(f"{describe('Bias', b)} must be [1, {7 if ctx.attr('use_peepholes') else 4} "
                 f"* hidden] (use_peepholes={ctx.attr('use_peepholes')})",
                 expected=f"[1, {width}]", found=f"{list(b.shape)}")
    if ctx.has_input("H0") and not ctx.has_input("C0"):
        ctx.fail("C0 must be given with H0 (Paddle's rule; C0 alone is fine)",
                 expected="C0 with H0", found="H0 only")
    for slot, cols, what in (("H0", p, "proj_size"), ("C0", d, "hidden")):
        if ctx.has_input(slot):
            s = ctx.input(slot)
            if s.rank != 2 or (_known(cols, s.shape[1]) and s.shape[1] != cols):
                ctx.fail(f"{describe(slot, s)} must be [sequences, {what}]",
                         expected=f"[-1, {cols}]", found=f"{list(s.shape)}")
    rows = x.shape[0]
    ctx.set_output("Projection", (rows, p), x.dtype, x.lod_level)
    ctx.set_output("Cell", (rows, d), x.dtype, x.lod_level)
    ctx.set_output("BatchGate", (rows, 4 * d), x.dtype)
    ctx.set_output("BatchCellPreAct", (rows, d), x.dtype)
    ctx.set_output("BatchHidden", (rows, d), x.dtype)


def _clip_check(v):
    # Paddle clips only for a value > 0; NaN would silently mean "no clip".
    return None if v == v else "must be a number (<= 0: no clipping)"


lstmp = OpDef(
    "lstmp",
    inputs=[
        In("Input", "[rows, 4D] input projections of every step (LoD: the sequences)",
           dtypes=FLOATS),
        In("H0", "[sequences, P] initial projections r (with C0; neither: zeros)",
           optional=True, dtypes=FLOATS),
        In("C0", "[sequences, D] initial cell states (may come alone)", optional=True,
           dtypes=FLOATS),
        In("Weight", "[P, 4D] recurrent weights {W_cr, W_ir, W_fr, W_or}", dtypes=FLOATS),
        In("ProjWeight", "[D, P] projection weight W_rh", dtypes=FLOATS),
        In("Bias", "[1, 4D] {b_c, b_i, b_f, b_o}, or [1, 7D] with the peepholes "
           "{..., W_ic, W_fc, W_oc}", dtypes=FLOATS),
    ],
    outputs=[
        Out("Projection", "[rows, P] r of every step, Input's LoD"),
        Out("Cell", "[rows, D] c of every step (clipped), Input's LoD"),
        Out("BatchGate", "[rows, 4D] the activated gates, step-major (for the gradient)",
            intermediate=True),
        Out("BatchCellPreAct", "[rows, D] cell_activation(c), step-major (for the gradient)",
            intermediate=True),
        Out("BatchHidden", "[rows, D] h, step-major (for the gradient)", intermediate=True),
    ],
    attrs=[
        Attr("use_peepholes", "bool", True, "diagonal connections from c to the gates"),
        Attr("is_reverse", "bool", False, "run each sequence from its end"),
        Attr("cell_clip", "float", 0.0, "> 0: c is clipped to [-cell_clip, cell_clip] before "
             "the output gate and cell_activation", check=_clip_check),
        Attr("proj_clip", "float", 0.0, "> 0: r is clipped to [-proj_clip, proj_clip] after "
             "its activation", check=_clip_check),
        Attr("gate_activation", "string", "sigmoid", "input, forget and output gates",
             choices=ACTIVATIONS),
        Attr("cell_activation", "string", "tanh", "applied to c in h = o * act(c)",
             choices=ACTIVATIONS),
        Attr("candidate_activation", "string", "tanh", "the candidate cell",
             choices=ACTIVATIONS),
        Attr("proj_activation", "string", "tanh", "the projection's: identity leaves r = h "
             "ProjWeight, any other value applies cell_activation to it (what Paddle's kernel "
             "computes, whatever its doc says)", choices=ACTIVATIONS),
    ],
    infer=_infer_lstmp,
    doc="Per sequence and step: i = act_g(x_i + r' W_ir + W_ic c' + b_i), f = act_g(x_f + "
        "r' W_fr + W_fc c' + b_f), g = act_cand(x_c + r' W_cr + b_c), c = clip(f c' + i g), "
        "o = act_g(x_o + r' W_or + W_oc c + b_o), h = o act_cell(c), r = clip(act_proj(h "
        "ProjWeight)) (c', r' of the step before; H0 and C0, or zeros, at the start; peephole "
        "terms only with use_peepholes; act_proj is cell_activation unless proj_activation is "
        "identity).",
)


def _infer_lstmp_grad(ctx):
    for slot in WEIGHTS[1:]:
        if ctx.has_output(grad_name(slot)) and ctx.has_input(slot):
            ctx.set_output_like(grad_name(slot), ctx.input(slot))
    if ctx.has_output("Input@GRAD"):
        # Paddle's grad op does not read Input: its gradient is shaped like BatchGate, with
        # the sequences' LoD of Projection.
        g, proj = ctx.input("BatchGate"), ctx.input("Projection")
        ctx.set_output("Input@GRAD", g.shape, g.dtype, proj.lod_level)


lstmp_grad = OpDef(
    "lstmp_grad",
    inputs=[In(s, f"the forward {s}", optional=s in ("H0", "C0"))
            for s in ("Weight", "ProjWeight", "Bias") + KEPT + ("H0", "C0")]
    + [In("Projection@GRAD", "the gradient of Projection (may have no value: zeros)",
          optional=True),
       In("Cell@GRAD", "the gradient of Cell (Paddle's maker does not pass it; when given, "
          "it counts)", optional=True)],
    outputs=[Out(grad_name(s), f"the gradient of {s}", optional=True) for s in WEIGHTS],
    attrs=list(lstmp.attrs.values()),
    infer=_infer_lstmp_grad,
    differentiable=False,
    doc="Gradient of lstmp: back through the steps, last first, in one kernel.",
)


def _lstmp_grad_maker(ctx):
    outs = {grad_name(s): ctx.input_grad(s) for s in WEIGHTS if ctx.input(s) and ctx.wants(s)}
    if not outs:
        return []
    ins = {s: ctx.input(s) for s in ("Weight", "ProjWeight", "Bias", "H0", "C0")
           if ctx.input(s)}
    ins.update({s: ctx.output(s) for s in KEPT})
    ins["Projection@GRAD"] = ctx.output_grad("Projection")
    ins["Cell@GRAD"] = ctx.output_grad("Cell")
    return [GradOp("lstmp_grad", ins, outs, dict(ctx.attrs))]


lstmp.grad = _lstmp_grad_maker

OPS = [lstmp, lstmp_grad]
