"""Every nn op that needs a kernel has a CPU kernel, a reference and a sample, and each sample
runs through the op and matches its reference."""
import importlib
import pkgutil

import numpy as np
import pytest

import headrace_nn.ops
import headrace_nn.reference
from headrace.ops import default_registry
from headrace_nn.reference import all_references, all_samples

REGISTRY = default_registry()
NN_OPS = sorted(d.type for d in REGISTRY.ops() if d.plugin == "headrace-nn:nn")
NEED_KERNEL = [t for t in NN_OPS if not REGISTRY.get(t).no_kernel]
REFERENCES, SAMPLES = all_references(), all_samples()


def _modules(package):
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__)
                  if not m.name.startswith("_"))


def test_the_plugin_has_ops_that_need_kernels():
    assert len(NEED_KERNEL) == 13


@pytest.mark.parametrize("op_type", NEED_KERNEL)
def test_op_has_a_cpu_kernel_for_both_float_dtypes(op_type):
    dtypes = REGISTRY.kernels_for(op_type).get("cpu", ())
    assert {"float32", "float64"} <= set(dtypes), f"{op_type}: cpu kernels for {dtypes}"


@pytest.mark.parametrize("op_type", NEED_KERNEL)
def test_op_has_a_reference_and_a_sample(op_type):
    assert callable(REFERENCES.get(op_type)), f"{op_type} has no REFERENCES entry"
    assert callable(SAMPLES.get(op_type)), f"{op_type} has no SAMPLES entry"


def test_references_name_only_nn_ops():
    assert set(REFERENCES) <= set(NN_OPS) and set(SAMPLES) <= set(NN_OPS)


def test_modules_mirror_the_definitions():
    # ops/<m>.py, kernels/cpu/<m>.pyx and reference/<m>.py share their module names.
    ops_modules = _modules(headrace_nn.ops)
    assert _modules(headrace_nn.reference) == ops_modules
    cpu = importlib.import_module("headrace_nn.kernels.cpu")
    assert _modules(cpu) == ops_modules
    for name in ops_modules:
        defined = {d.type for d in importlib.import_module(f"headrace_nn.ops.{name}").OPS}
        kernels = {k[0] for k in importlib.import_module(f"headrace_nn.kernels.cpu.{name}")
                   .KERNELS}
        refs = set(importlib.import_module(f"headrace_nn.reference.{name}").REFERENCES)
        assert kernels == refs == defined, name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op_type", NEED_KERNEL)
def test_sample_matches_reference(check, op_type, dtype):
    inputs, attrs = SAMPLES[op_type](np.random.default_rng(0), dtype)
    check(op_type, inputs, attrs)


@pytest.mark.parametrize("op_type", NEED_KERNEL)
def test_samples_are_reproducible(op_type):
    a = SAMPLES[op_type](np.random.default_rng(5), "float64")
    b = SAMPLES[op_type](np.random.default_rng(5), "float64")
    assert a[1] == b[1]
    for slot in a[0]:
        x, y = a[0][slot], b[0][slot]
        np.testing.assert_array_equal(np.asarray(getattr(x, "data", x)),
                                      np.asarray(getattr(y, "data", y)))
