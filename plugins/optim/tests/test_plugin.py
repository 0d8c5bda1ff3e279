"""The optim plugin as a whole: which ops it registers, and that each is documented."""
import pytest

from headrace.ops import default_registry, iter_op_modules

PACKAGE = "headrace_optim.ops"
PLUGIN = "headrace-optim:optim"
EXPECTED = [
    "adagrad", "adam", "momentum", "rmsprop", "sgd",
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
