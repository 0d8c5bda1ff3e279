"""Every math op is complete: a CPU kernel, a NumPy reference and a sample, and each sample
runs through the executor to the reference's numbers (float32 and float64)."""
import numpy as np
import pytest

from headrace.ops import iter_op_modules
from headrace_math.reference import MODULES, all_references, all_samples

OPS = [op for m in iter_op_modules("headrace_math.ops") for op in m.OPS]
KERNEL_OPS = [op for op in OPS if not op.no_kernel]


def test_reference_modules_mirror_op_modules():
    ops = sorted(m.__name__.rsplit(".", 1)[1] for m in iter_op_modules("headrace_math.ops"))
    refs = sorted(m.__name__.rsplit(".", 1)[1]
                  for m in iter_op_modules("headrace_math.reference"))
    assert refs == ops == sorted(MODULES)


@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_op_has_kernel_reference_and_sample(math_registry, opdef):
    assert "cpu" in math_registry.kernels_for(opdef.type), f"{opdef.type}: no CPU kernel"
    assert opdef.type in all_references(), f"{opdef.type}: no REFERENCES entry"
    assert opdef.type in all_samples(), f"{opdef.type}: no SAMPLES entry"


def test_no_stray_entries():
    types = {op.type for op in OPS}
    assert set(all_references()) <= types and set(all_samples()) <= types


@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_kernel_dtypes_are_declared_by_the_op(math_registry, opdef):
    # A kernel may serve fewer dtypes than the op allows (float16), never others.
    for slot in opdef.inputs[:1]:
        if slot.dtypes is not None:
            assert set(math_registry.kernels_for(opdef.type)["cpu"]) <= set(slot.dtypes)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_sample_matches_reference(check, opdef, dtype):
    for seed in range(3):
        inputs, attrs = all_samples()[opdef.type](np.random.default_rng(seed), dtype)
        check(opdef.type, inputs, attrs)


def _strided(v):
    if isinstance(v, list):
        return [_strided(a) for a in v]
    return np.repeat(v, 2, axis=-1)[..., ::2] if v.ndim else v


@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_sample_with_strided_inputs(check, opdef):
    # The executor makes fed arrays contiguous; strided feeds must give the same numbers.
    inputs, attrs = all_samples()[opdef.type](np.random.default_rng(7), "float64")
    strided = {slot: _strided(v) for slot, v in inputs.items()}
    assert all(not a.flags.c_contiguous for v in strided.values()
               for a in (v if isinstance(v, list) else [v]) if a.ndim and a.shape[-1] > 1)
    check(opdef.type, strided, attrs)


# == gradients =================================================================================

from headrace.ops.grad import EMPTY, GradContext, grad_name  # noqa: E402
from headrace.testing import build_op  # noqa: E402

FORWARD = [op for op in OPS if not op.type.endswith("_grad")]
DIFFERENTIABLE = [op for op in FORWARD if op.differentiable]
GRAD_DEFS = [op for op in OPS if op.type.endswith("_grad")]
NO_GRADIENT = {"less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal",
               "logical_and", "logical_or", "logical_xor", "logical_not", "reduce_all",
               "reduce_any", "clip_by_norm", "fc"}  # clip_by_norm, fc: as in Paddle (a gradient
# clip; an inference-only fused op)


def test_which_ops_are_differentiable():
    assert {op.type for op in FORWARD if not op.differentiable} == NO_GRADIENT
    assert all(not op.differentiable for op in GRAD_DEFS)
    assert len(DIFFERENTIABLE) == 43  # (scale and sum are the core's)


@pytest.mark.parametrize("opdef", GRAD_DEFS, ids=lambda d: d.type)
def test_grad_op_belongs_to_a_differentiable_op(math_registry, opdef):
    fwd = math_registry.get(opdef.type[:-len("_grad")])
    assert fwd.differentiable and fwd.grad is not None
    for dtype in ("float32", "float64"):
        math_registry.kernel(opdef.type, "cpu", dtype)   # raises KernelNotFoundError otherwise
    # Slots follow the conventions: forward slots read, <out>@GRAD in, <in>@GRAD out.
    assert [s.name for s in opdef.outputs] == [grad_name(s.name) for s in fwd.inputs]
    assert all(s.optional for s in opdef.outputs)
    ins = [s.name for s in opdef.inputs]
    assert ins[-1] == "Out@GRAD" and all(fwd.input(n) or fwd.output(n) for n in ins[:-1])


def _spec(v):
    return (list(np.shape(v)), np.asarray(v).dtype.name, 0)


def _built_from_sample(math_registry, opdef, seed=0):
    """A one-op program of ``opdef`` built from its float64 sample."""
    inputs, attrs = all_samples()[opdef.type](np.random.default_rng(seed), "float64")
    specs = {s: [_spec(a) for a in v] if isinstance(v, list) else _spec(v)
             for s, v in inputs.items() if v is not None}
    return build_op(opdef.type, specs, None, attrs, registry=math_registry)


@pytest.mark.parametrize("opdef", DIFFERENTIABLE, ids=lambda d: d.type)
def test_differentiable_op_has_a_gradient_maker_with_cpu_kernels(math_registry, opdef):
    assert opdef.grad is not None, f"{opdef.type}: differentiable but no gradient maker"
    prog, op = _built_from_sample(math_registry, opdef)
    block = prog.global_block()
    floats = {n for n in op.input_arg_names if block.var(n).dtype == "float64"}
    assert floats, f"{opdef.type}: its sample has no float input"
    specs = opdef.grad(GradContext(op, floats, {grad_name(n) for n in op.output_arg_names}))
    assert specs, f"{opdef.type}: the gradient maker wrote no ops"
    written = set()
    for spec in specs:
        for dtype in ("float32", "float64"):
            math_registry.kernel(spec.type, "cpu", dtype)
        written.update(n for names in spec.outputs.values() for n in names if n != EMPTY)
        read = {n for names in spec.inputs.values() for n in names}
        # forward variables and the gradients of the outputs, nothing else
        assert read <= set(op.input_arg_names) | set(op.output_arg_names) | \
            {grad_name(n) for n in op.output_arg_names}
    assert written == {grad_name(n) for n in floats}


@pytest.mark.parametrize("opdef", DIFFERENTIABLE, ids=lambda d: d.type)
def test_gradient_maker_writes_nothing_when_no_gradient_is_wanted(math_registry, opdef):
    prog, op = _built_from_sample(math_registry, opdef)
    ctx = GradContext(op, set(), {grad_name(n) for n in op.output_arg_names})
    assert opdef.grad(ctx) == []


@pytest.mark.parametrize("opdef", [d for d in DIFFERENTIABLE if len(d.inputs) == 2],
                         ids=lambda d: d.type)
def test_gradient_maker_binds_only_the_wanted_gradient(math_registry, opdef):
    prog, op = _built_from_sample(math_registry, opdef)
    x = op.input("X")[0]
    (spec,) = opdef.grad(GradContext(op, {x}, {grad_name(n) for n in op.output_arg_names}))
    assert spec.outputs == {"X@GRAD": [grad_name(x)]}
