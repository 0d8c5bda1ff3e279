"""sum: the elementwise sum of any number of same-shaped inputs; the backward pass uses it to
add up several contributions to one gradient."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import EMPTY, GradOp
from headrace.ops.shape import dim_eq, merge_dim, numel

from ._common import NUMERIC, label

_KINDS = ("lod_tensor", "selected_rows", "lod_tensor_array")


def _out_kind(ctx, xs):
    """Paddle's rule: arrays add up to an array (all must be arrays); otherwise any dense
    input makes a dense Out, and only all-sparse inputs give a selected_rows Out."""
    kinds = [m.kind for m in xs]
    for m in xs:
        if m.kind not in _KINDS:
            ctx.fail(f"input {label(m, 'X')} is a {m.kind} variable", expected=" or ".join(_KINDS),
                     found=m.kind)
    if "lod_tensor_array" in kinds:
        if any(k != "lod_tensor_array" for k in kinds):
            ctx.fail("inputs mix tensor arrays with other kinds",
                     expected="all X inputs lod_tensor_array", found=[f"{m.name}: {m.kind}"
                                                                      for m in xs])
        return "lod_tensor_array"
    return "lod_tensor" if "lod_tensor" in kinds else "selected_rows"


def _infer(ctx):
    xs = ctx.inputs("X")
    if not xs:
        ctx.fail("needs at least one input", expected="1 or more X variables", found="none")
    kind = _out_kind(ctx, xs)
    first = xs[0]
    for m in xs[1:]:
        if m.dtype is not None and first.dtype is not None and m.dtype != first.dtype:
            ctx.fail(f"inputs differ in dtype: {label(first, 'X')} is {first.dtype}, "
                     f"{label(m, 'X')} is {m.dtype}", expected=f"every X of dtype {first.dtype}",
                     found=m.dtype)
    # Inputs known to be empty are skipped, as Paddle does: they are absent contributions.
    shaped = [m for m in xs if numel(m.shape) != 0] or xs
    ref = shaped[0]
    shape = list(ref.shape)
    for m in shaped[1:]:
        ok = m.rank == ref.rank and all(dim_eq(a, b) for a, b in zip(shape, m.shape))
        if not ok:
            ctx.fail(f"{label(m, 'X')} has shape {list(m.shape)} but {label(ref, 'X')} has "
                     f"{list(ref.shape)}", expected=f"every X of shape {list(ref.shape)} "
                     "(-1 matches any size)", found=list(m.shape))
        # Each input may know dims the others leave as -1: Out keeps all that is known.
        shape = [merge_dim(a, b) for a, b in zip(shape, m.shape)]
    ctx.set_output("Out", shape, first.dtype, lod_level=first.lod_level, kind=kind)


sum_op = OpDef(
    "sum",
    inputs=[In("X", "tensors to add, all of one shape and dtype", duplicable=True,
               dtypes=NUMERIC)],
    outputs=[Out("Out", "their elementwise sum; LoD of the first input")],
    infer=_infer,
    doc="Out = X[0] + X[1] + ... elementwise. All inputs share shape (-1 matches any size; "
        "Out keeps every dim some input knows) and dtype; inputs known to be empty are "
        "skipped. Tensor arrays add up to a tensor array; selected_rows inputs give a "
        "selected_rows Out unless a dense input is present. The gradient of each input is "
        "a copy of Out@GRAD (a scale op with scale 1).",
)

OPS = [sum_op]


def _sum_grad(ctx):
    # d(X[0] + X[1] + ...)/dX[i] = 1: each wanted input gradient is a copy of Out@GRAD, written
    # by a scale op (scale 1), as Paddle's sum gradient does. An input listed twice gets two
    # copies, which the backward pass adds up.
    dout = ctx.output_grad("Out")
    return [GradOp("scale", {"X": dout}, {"Out": [g]}, {"scale": 1.0, "bias": 0.0})
            for g in ctx.input_grad("X") if g != EMPTY]


sum_op.grad = _sum_grad
