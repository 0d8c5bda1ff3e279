"""select_input / select_output: pick one of several variables by an int32 mask, as Paddle
lowers ``cond`` (the taken branch's output) and if/else in converted programs.

The variables not picked may hold no value at all: their branches did not run.
"""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import GradOp

from ._common import expect_kind, expect_one_element


def _check_mask(ctx):
    mask = ctx.input("Mask")
    expect_kind(ctx, mask, "lod_tensor", "Mask")
    expect_one_element(ctx, mask, "Mask")


def _merged_shape(metas):
    """The shape the picked variable has whichever is picked: dims that differ are -1."""
    shapes = [tuple(m.shape) for m in metas]
    if len({len(s) for s in shapes}) != 1:
        return None
    return tuple(d if all(s[k] == d for s in shapes) else -1 for k, d in enumerate(shapes[0]))


def _infer_select_input(ctx):
    _check_mask(ctx)
    xs = ctx.inputs("X")
    dtypes = {m.dtype for m in xs}
    if len(dtypes) > 1:
        ctx.fail("the inputs 'X' must share one dtype (they are the branches of one value)",
                 expected="one dtype", found=", ".join(f"{m.name}: {m.dtype}" for m in xs))
    kinds = {m.kind for m in xs}
    if len(kinds) > 1:  # Paddle: "All inputs must have same variable type"
        ctx.fail("the inputs 'X' must all be tensors or all tensor arrays",
                 expected="one kind", found=", ".join(f"{m.name}: {m.kind}" for m in xs))
    shape = _merged_shape(xs)
    ctx.set_output("Out", shape if shape is not None else (-1,), xs[0].dtype,
                   max(m.lod_level for m in xs), kind=xs[0].kind)


select_input = OpDef(
    "select_input",
    inputs=[In("X", "the candidates, tensors or tensor arrays (only the picked one needs a "
               "value)", duplicable=True),
            In("Mask", "which candidate: an int32 tensor of one element", dtypes=("int32",))],
    outputs=[Out("Out", "X[Mask], with its LoD")],
    infer=_infer_select_input,
    doc="Out = X[Mask]. Its gradient (select_input_grad): Out@GRAD goes to X[Mask]@GRAD, "
        "the other candidates get zeros where they have a value and none where they have "
        "none (their branches did not run).",
)


def _infer_select_output(ctx):
    _check_mask(ctx)
    x = ctx.input("X")
    for i in range(ctx.num_outputs("Out")):
        ctx.set_output_like("Out", x, index=i)


select_output = OpDef(
    "select_output",
    inputs=[In("X", "the value to route"),
            In("Mask", "which output: an int32 tensor of one element", dtypes=("int32",))],
    outputs=[Out("Out", "the candidates; only Out[Mask] is written", duplicable=True)],
    infer=_infer_select_output,
    doc="Out[Mask] = X; the other outputs are left as they are. Its gradient is "
        "select_input of the outputs' gradients.",
)


def _infer_select_input_grad(ctx):
    xs = ctx.inputs("X")
    for k in range(min(len(xs), ctx.num_outputs("X@GRAD"))):
        ctx.set_output_like("X@GRAD", xs[k], index=k)


# Paddle's gradient of select_input is select_output(Out@GRAD) -> X@GRAD, which leaves the
# gradients of the candidates not picked without a value. That is right for cond's lowering
# (those candidates are outputs of a branch that did not run, and nothing reads their
# gradients), but a candidate that does have a value (a flat program, a parameter picked
# between) would hand its grad ops and the optimizer a gradient with no value. So our
# gradient reads X to zero-fill those; select_output still runs Paddle's own programs.
select_input_grad = OpDef(
    "select_input_grad",
    inputs=[In("X", "the forward candidates (for the shapes of the zeros)", duplicable=True),
            In("Mask", "the forward mask", dtypes=("int32",)),
            In("Out@GRAD", "the gradient of Out")],
    outputs=[Out("X@GRAD", "one gradient per candidate", duplicable=True, optional=True)],
    infer=_infer_select_input_grad,
    differentiable=False,
    doc="X@GRAD[Mask] = Out@GRAD; X@GRAD[k] = zeros like X[k] for the other candidates that "
        "have a value, no value for those that have none (a branch that did not run).",
)


def _select_input_grad(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("select_input_grad", {"X": ctx.input("X"), "Mask": ctx.input("Mask"),
                                         "Out@GRAD": ctx.output_grad("Out")},
                   {"X@GRAD": ctx.input_grad("X")}, {})]


def _select_output_grad(ctx):
    if not ctx.wants("X"):
        return []
    return [GradOp("select_input", {"X": ctx.output_grad("Out"), "Mask": ctx.input("Mask")},
                   {"Out": ctx.input_grad("X")}, {})]


select_input.grad = _select_input_grad
select_output.grad = _select_output_grad

OPS = [select_input, select_output, select_input_grad]
