"""The core's own ops (headrace.core_ops) are as complete as any plugin's, with nothing but the
core installed: documented definitions registered by the core plugin, a shape rule, a CPU
kernel, a NumPy reference and sample that agree through the executor, a gradient maker whose
ops the core can run, and a finite-difference gradient check. tests/test_hygiene.py and
tests/test_kernel_fuzz.py cover them again among every installed op."""
import numpy as np
import pytest

from headrace.core_ops.plugin import NAME as CORE
from headrace.ops import build_registry, iter_op_modules
from headrace.ops.grad import EMPTY, GradContext, grad_name
from headrace.testing import build_op, check_grad, check_op, definition_problems, load_references

PACKAGE = "headrace.core_ops.ops"
REGISTRY = build_registry(autoload=False)           # the core alone
OPDEFS = [d for m in iter_op_modules(PACKAGE) for d in m.OPS]
KERNEL_OPS = [d for d in OPDEFS if not d.no_kernel]
DIFFERENTIABLE = [d for d in OPDEFS if d.differentiable]
REFERENCES, SAMPLES = {}, {}
for _m in iter_op_modules("headrace.core_ops.reference"):
    REFERENCES.update(_m.REFERENCES)
    SAMPLES.update(_m.SAMPLES)


def test_the_core_owns_what_it_emits():
    assert sorted(d.type for d in OPDEFS) == [
        "assign", "feed", "fetch", "fill_any_like", "fill_constant", "fill_zeros_like", "print",
        "scale", "sum"]
    assert sorted(d.type for d in OPDEFS if d.no_kernel) == ["feed", "fetch"]
    assert sorted(d.type for d in DIFFERENTIABLE) == ["assign", "print", "scale", "sum"]
    assert REGISTRY.plugins == [CORE] and not REGISTRY.failed
    assert REGISTRY.ops_of(CORE) == sorted(d.type for d in OPDEFS)


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_registered_and_documented(opdef):
    assert not definition_problems(opdef, CORE, PACKAGE, registry=REGISTRY)
    assert opdef.infer is not None, f"{opdef.type}: no shape rule"


@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_op_has_kernel_reference_and_sample(opdef):
    assert "cpu" in REGISTRY.kernels_for(opdef.type), f"{opdef.type}: no CPU kernel"
    assert opdef.type in REFERENCES, f"{opdef.type}: no reference"
    assert opdef.type in SAMPLES, f"{opdef.type}: no sample"


def test_references_are_found_for_the_hygiene_and_fuzz_tests():
    assert set(REFERENCES) == set(SAMPLES) == {d.type for d in KERNEL_OPS}
    refs, samples = load_references()
    for t in REFERENCES:
        assert refs[t] is REFERENCES[t] and samples[t] is SAMPLES[t], t


@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", range(4))
def test_sample_matches_reference(opdef, dtype, seed):
    inputs, attrs = SAMPLES[opdef.type](np.random.default_rng(seed), dtype)
    full = {a.name: a.default for a in opdef.attrs.values() if not a.required}
    full.update(attrs)
    expected = REFERENCES[opdef.type](inputs, full)
    check_op(opdef.type, inputs, expected, attrs=attrs, registry=REGISTRY)


# == gradients =================================================================================

def _spec(v):
    arr = np.asarray(v)
    return (list(arr.shape), arr.dtype.name, 0)


@pytest.mark.parametrize("opdef", DIFFERENTIABLE, ids=lambda d: d.type)
def test_gradient_maker_writes_core_ops_only(opdef):
    inputs, attrs = SAMPLES[opdef.type](np.random.default_rng(0), "float64")
    specs = {s: [_spec(a) for a in v] if isinstance(v, list) else _spec(v)
             for s, v in inputs.items()}
    prog, op = build_op(opdef.type, specs, attrs=attrs, registry=REGISTRY)
    wanted = set(op.input_arg_names)
    grads = opdef.grad(GradContext(op, wanted, {grad_name(n) for n in op.output_arg_names}))
    assert grads, f"{opdef.type}: the gradient maker wrote no ops"
    written = set()
    for spec in grads:
        # the core alone must run the backward pass of its own ops
        assert REGISTRY.plugin_of(spec.type) == CORE, spec.type
        REGISTRY.kernel(spec.type, "cpu", "float64")
        written.update(n for names in spec.outputs.values() for n in names if n != EMPTY)
    assert {grad_name(n) for n in wanted} <= written
    # nothing wanted, nothing written
    for spec in opdef.grad(GradContext(op, set(), {grad_name(n) for n in op.output_arg_names})):
        assert all(n == EMPTY for names in spec.outputs.values() for n in names), spec


@pytest.mark.parametrize("opdef", DIFFERENTIABLE, ids=lambda d: d.type)
@pytest.mark.parametrize("seed", range(3))
def test_gradient_finite_differences(opdef, seed):
    inputs, attrs = SAMPLES[opdef.type](np.random.default_rng(seed), "float64")
    check_grad(opdef.type, inputs, wrt=list(inputs), attrs=attrs, registry=REGISTRY)
