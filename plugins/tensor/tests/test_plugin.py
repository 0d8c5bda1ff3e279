"""The tensor plugin as a whole: which ops it registers, and that each is documented."""
import pytest

from headrace.ops import default_registry, iter_op_modules

PACKAGE = "headrace_tensor.ops"
PLUGIN = "headrace-tensor:tensor"
EXPECTED = [
    "assign", "assign_value", "cast", "concat", "feed", "fetch", "fill_constant", "fill_zeros_like",
    "flatten_contiguous_range", "gaussian_random", "lod_reset", "reshape2", "split", "transpose2",
    "uniform_random",
    # grad ops (the other differentiable ops' gradients are made of forward ops)
    "concat_grad", "flatten_contiguous_range_grad", "reshape2_grad", "transpose2_grad",
]
OPDEFS = [d for m in iter_op_modules(PACKAGE) for d in m.OPS]


def test_the_ops_of_the_family():
    assert sorted(d.type for d in OPDEFS) == sorted(EXPECTED)


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_registered_by_this_plugin(opdef):
    registry = default_registry()
    assert registry.get(opdef.type) is opdef
    assert PLUGIN not in registry.failed and opdef.plugin == PLUGIN


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_documented(opdef):
    assert opdef.doc.strip()
    undocumented = [s.name for s in opdef.inputs + opdef.outputs if not s.doc.strip()]
    undocumented += [a.name for a in opdef.attrs.values() if not a.doc.strip()]
    assert not undocumented
    assert opdef.infer is not None and opdef.infer.__module__.startswith(PACKAGE)
