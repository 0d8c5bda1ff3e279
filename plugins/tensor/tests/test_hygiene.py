"""Every op of the plugin that needs a kernel is complete: a CPU kernel, a NumPy reference and
a sample; each deterministic sample, run through the executor, matches its reference (the
random ops' references return None: test_random.py checks their statistics)."""
import numpy as np
import pytest

from headrace.ops import default_registry, iter_op_modules
from headrace.testing import check_op, run_op

OPDEFS = [d for m in iter_op_modules("headrace_tensor.ops") for d in m.OPS if not d.no_kernel]
REFERENCES, SAMPLES = {}, {}
for _m in iter_op_modules("headrace_tensor.reference"):
    REFERENCES.update(_m.REFERENCES)
    SAMPLES.update(_m.SAMPLES)
RANDOM = {"uniform_random", "gaussian_random"}


def test_every_op_has_a_kernel():
    # (feed and fetch, which the executor interprets, are the core's: headrace.core_ops)
    interpreted = [d.type for m in iter_op_modules("headrace_tensor.ops") for d in m.OPS
                   if d.no_kernel]
    assert interpreted == []


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_op_has_kernel_reference_and_sample(opdef):
    assert "cpu" in default_registry().kernels_for(opdef.type), f"{opdef.type}: no CPU kernel"
    assert opdef.type in REFERENCES, f"{opdef.type}: no reference"
    assert opdef.type in SAMPLES, f"{opdef.type}: no sample"


def test_nothing_extra():
    assert set(REFERENCES) == set(SAMPLES) == {d.type for d in OPDEFS}


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", range(6))
def test_sample_matches_reference(opdef, dtype, seed):
    inputs, attrs = SAMPLES[opdef.type](np.random.default_rng(seed), dtype)
    full = {a.name: a.default for a in opdef.attrs.values() if not a.required}
    full.update(attrs)
    expected = REFERENCES[opdef.type](inputs, full)
    if opdef.type in RANDOM:
        assert expected == {"Out": None}
        (out,) = run_op(opdef.type, inputs, attrs=attrs)["Out"]
        assert out.shape == tuple(attrs["shape"]) and out.dtype == dtype
        return
    assert all(v is not None for v in expected.values())
    check_op(opdef.type, inputs, expected, attrs=attrs)


# == gradients =================================================================================

from headrace.ops.grad import EMPTY, GradContext, grad_name  # noqa: E402
from headrace.runtime import Tensor  # noqa: E402
from headrace.testing import build_op  # noqa: E402

ALL_OPDEFS = [d for m in iter_op_modules("headrace_tensor.ops") for d in m.OPS]
DIFFERENTIABLE = [d for d in ALL_OPDEFS if d.differentiable]
GRAD_OPS = {"reshape2_grad", "flatten_contiguous_range_grad", "transpose2_grad", "concat_grad",
            "unstack_grad", "slice_grad", "strided_slice_grad", "stack_grad",
            "squeeze2_grad", "unsqueeze2_grad",
            "gather_grad", "gather_nd_grad", "scatter_grad", "where_grad",
            "expand_v2_grad", "expand_as_v2_grad", "expand_grad", "pad_grad",
            "label_smooth_grad"}
NO_GRADIENT = {"assign_value", "uniform_random", "gaussian_random", "fill_constant_batch_size_like",
               "arg_max", "arg_min", "one_hot_v2", "shape"}


def test_which_ops_are_differentiable():
    assert {d.type for d in ALL_OPDEFS if not d.differentiable} == NO_GRADIENT | GRAD_OPS
    assert {d.type for d in DIFFERENTIABLE} == {
        "cast", "concat", "split", "reshape2", "flatten_contiguous_range",
        "transpose2", "lod_reset", "unstack", "slice", "strided_slice", "stack", "squeeze2",
        "unsqueeze2",
        "gather", "gather_nd", "scatter", "where",
        "expand_v2", "expand_as_v2", "expand", "pad", "label_smooth"}
# Float inputs that get no gradient, as in Paddle (only their shape, or a constant, is read).
NO_GRAD_INPUTS = {"expand_as_v2": {"Y"}, "label_smooth": {"PriorDist"}}


def _spec(v):
    arr = v.data if isinstance(v, Tensor) else np.asarray(v)
    return (list(arr.shape), arr.dtype.name, len(v.lod) if isinstance(v, Tensor) else 0)


def _built_from_sample(opdef, seed=0):
    """A one-op program of ``opdef`` built from its float64 sample."""
    inputs, attrs = SAMPLES[opdef.type](np.random.default_rng(seed), "float64")
    full = {a.name: a.default for a in opdef.attrs.values() if not a.required}
    full.update(attrs)
    expected = REFERENCES[opdef.type](inputs, full)
    specs = {s: [_spec(a) for a in v] if isinstance(v, list) else _spec(v)
             for s, v in inputs.items() if v is not None}
    outputs = {s.name: len(expected[s.name]) if isinstance(expected[s.name], list) else 1
               for s in opdef.outputs if not s.intermediate}
    return build_op(opdef.type, specs, outputs, attrs)


@pytest.mark.parametrize("opdef", DIFFERENTIABLE, ids=lambda d: d.type)
@pytest.mark.parametrize("seed", range(3))
def test_differentiable_op_has_a_gradient_maker_with_cpu_kernels(opdef, seed):
    assert opdef.grad is not None, f"{opdef.type}: differentiable but no gradient maker"
    registry = default_registry()
    grad_type = opdef.type + "_grad"
    if registry.find(grad_type) is not None:
        assert grad_type in GRAD_OPS
        assert not registry.get(grad_type).differentiable
        for dtype in ("float32", "float64"):
            registry.kernel(grad_type, "cpu", dtype)  # raises KernelNotFoundError otherwise
    # What the maker writes, for the op built from its sample with every float input wanted:
    # ops that are registered with a float64 CPU kernel and write each wanted gradient.
    prog, op = _built_from_sample(opdef, seed)
    block = prog.global_block()
    skip = {n for s in NO_GRAD_INPUTS.get(opdef.type, ()) for n in op.input(s)}
    floats = {n for n in op.input_arg_names if block.var(n).dtype == "float64"} - skip
    ctx = GradContext(op, floats, {grad_name(n) for n in op.output_arg_names})
    specs = opdef.grad(ctx)
    assert specs, f"{opdef.type}: the gradient maker wrote no ops"
    written = set()
    for spec in specs:
        assert "cpu" in registry.kernels_for(spec.type), f"{spec.type}: no CPU kernel"
        registry.kernel(spec.type, "cpu", "float64")
        written.update(n for names in spec.outputs.values() for n in names if n != EMPTY)
        read = {n for names in spec.inputs.values() for n in names}
        # gradients of the (non-intermediate) outputs, forward variables and nothing else
        assert read <= set(op.input_arg_names) | set(op.output_arg_names) | \
            {grad_name(n) for n in op.output_arg_names}
    assert {grad_name(n) for n in floats} <= written


@pytest.mark.parametrize("opdef", DIFFERENTIABLE, ids=lambda d: d.type)
def test_gradient_maker_writes_no_gradient_when_none_is_wanted(opdef):
    prog, op = _built_from_sample(opdef)
    ctx = GradContext(op, set(), {grad_name(n) for n in op.output_arg_names})
    # (grad_of's makers still return their grad op, with no outputs bound)
    for spec in opdef.grad(ctx):
        assert all(n == EMPTY for names in spec.outputs.values() for n in names), spec
