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


def _is_frame_op(op_type):
    REGISTRY.kernels_for(op_type)  # imports the lazily registered kernel packages
    cpu = [k for k in REGISTRY._kernels.get((op_type, "cpu"), ())]
    return bool(cpu) and all(getattr(k.fn, "frame_kernel", False) for k in cpu)


def test_frame_ops_are_run_by_the_flow_tests():
    import pathlib
    flow = (pathlib.Path(__file__).parent.parent / "plugins" / "control" / "tests" /
            "test_flow_kernels.py").read_text()
    frame = [d.type for d in OPS if _is_frame_op(d.type)]
    assert frame, "no frame kernels found"
    for t in frame:
        assert f'"{t}"' in flow, f"frame op {t} is not exercised in test_flow_kernels.py"


@pytest.mark.parametrize("opdef", OPS, ids=lambda d: d.type)
def test_op_has_shape_rule_kernel_reference_and_sample(opdef):
    refs, samples = load_references()
    missing = []
    if opdef.infer is None:
        missing.append("a shape rule (infer)")
    if "cpu" not in REGISTRY.kernels_for(opdef.type):
        missing.append("a CPU kernel")
    # Frame kernels (control flow, tensor arrays) drive sub-plans and slots rather than map
    # inputs to outputs; plugins/control/tests/test_flow_kernels.py runs each of them.
    if not _is_frame_op(opdef.type):
        if opdef.type not in refs:
            missing.append("a NumPy reference (reference/<module>.py REFERENCES)")
        if opdef.type not in samples:
            missing.append("a sample (reference/<module>.py SAMPLES)")
    assert not missing, f"op '{opdef.type}' (plugin {opdef.plugin}) lacks " + ", ".join(missing)


@pytest.mark.parametrize("opdef", [d for d in REGISTRY.ops() if d.no_kernel],
                         ids=lambda d: d.type)
def test_interpreted_ops_are_known_to_the_executor(opdef):
    # feed/fetch are bound by the executor itself; control-flow ops run through frame kernels
    # that drive sub-plans, so only these two may go without a kernel.
    assert opdef.type in ("feed", "fetch")
