"""Every registered op is complete: a shape rule, a CPU kernel, a NumPy reference and a sample
that the tests run (ops the executor interprets itself aside)."""
import pytest

from headrace.ops import default_registry
from headrace.testing import load_references

REGISTRY = default_registry()
OPS = [d for d in REGISTRY.ops() if not d.no_kernel]


def test_first_party_plugins_loaded():
    names = {n.split(":")[0] for n in REGISTRY.plugins}
    assert {"headrace-tensor", "headrace-math", "headrace-nn", "headrace-optim",
            "headrace-control"} <= names
    assert not REGISTRY.failed


@pytest.mark.parametrize("opdef", OPS, ids=lambda d: d.type)
def test_op_has_shape_rule_kernel_reference_and_sample(opdef):
    refs, samples = load_references()
    missing = []
    if opdef.infer is None:
        missing.append("a shape rule (infer)")
    if "cpu" not in REGISTRY.kernels_for(opdef.type):
        missing.append("a CPU kernel")
    if opdef.type not in refs:
        missing.append("a NumPy reference (reference/<module>.py REFERENCES)")
    if opdef.type not in samples:
        missing.append("a sample (reference/<module>.py SAMPLES)")
    assert not missing, f"op '{opdef.type}' (plugin {opdef.plugin}) lacks " + ", ".join(missing)


@pytest.mark.parametrize("opdef", [d for d in REGISTRY.ops() if d.no_kernel],
                         ids=lambda d: d.type)
def test_interpreted_ops_are_known_to_the_executor(opdef):
    # feed/fetch are bound by the executor itself; control-flow ops run through kernels that
    # receive sub-plans, so only these two may go without a kernel.
    assert opdef.type in ("feed", "fetch")
