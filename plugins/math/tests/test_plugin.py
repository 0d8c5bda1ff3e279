"""The plugin as a whole: every op of every module is documented and registered."""
import warnings

import pytest

from headrace.ops import PluginWarning, default_registry, iter_op_modules
from headrace.testing.plugin_dists import first_party_plugin

MODULES = list(iter_op_modules("headrace_math.ops"))
# The attributes Paddle gives no default (its programs always set them).
NO_DEFAULT = {("clip_by_norm", "max_norm")}
ALL_OPS = [op for m in MODULES for op in m.OPS]


def test_modules_and_op_count():
    assert [m.__name__.rsplit(".", 1)[1] for m in MODULES] == [
        "activation", "clip", "compare", "cumsum", "elementwise", "fc", "logical", "matmul",
        "reduce"]
    # 57 forward ops and 43 grad ops (24 activations, 7 elementwise, 3 products, 6 reductions,
    # clip, squared_l2_norm, cumsum's flattening case; clip_by_norm and the inference-only fc
    # have none); scale and sum are the core's (headrace.core_ops): autodiff emits them
    assert len(ALL_OPS) == len({op.type for op in ALL_OPS}) == 100
    assert len([op for op in ALL_OPS if op.type.endswith("_grad")]) == 43


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.type)
def test_documented(op):
    assert op.doc and op.doc.strip().endswith(".")
    assert op.infer is not None
    for slot in op.inputs + op.outputs:
        assert slot.doc, f"{op.type}: slot {slot.name} has no doc"
    for attr in op.attrs.values():
        assert attr.doc, f"{op.type}: attribute {attr.name} has no doc"
        assert not attr.required or (op.type, attr.name) in NO_DEFAULT, \
            f"{op.type}: Paddle gives every attribute a default"


def test_registered_in_default_registry():
    # Other plugins are written in parallel; one of them failing must not hide this plugin.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        registry = default_registry()
    math = first_party_plugin("math")   # "headrace:math" where installed whole
    assert math in registry.plugins
    for op in ALL_OPS:
        assert registry.find(op.type) is op, op.type
        assert registry.plugin_of(op.type) == math


def test_math_registry_holds_exactly_these(math_registry):
    assert math_registry.ops_of("headrace-math:math") == sorted(op.type for op in ALL_OPS)
    # beside the core's own ops, which every registry has
    assert set(math_registry) - set(math_registry.ops_of("headrace-math:math")) == \
        set(math_registry.ops_of("headrace:core"))
