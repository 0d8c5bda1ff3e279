"""Fixtures of the math plugin's tests.

Programs are built against a registry holding only this plugin, so the tests do not depend on
the other plugins (written in parallel) loading cleanly.
"""
import pytest

import headrace_math.plugin
from headrace.ops import build_registry
from headrace.testing import fixtures


@pytest.fixture(scope="session")
def math_registry():
    # The name discovery gives it: the registry writes it onto the shared OpDef objects.
    reg = build_registry(plugins=[("headrace-math:math", headrace_math.plugin)],
                         autoload=False)
    assert not reg.failed, reg.failed
    return reg


@pytest.fixture
def infer(math_registry):
    """``infer(op_type, inputs, attrs=None)`` -> ``(shape, dtype)`` of the single Out."""
    return fixtures.shape_inferrer(math_registry)


@pytest.fixture
def build(math_registry):
    """``build(op_type, inputs, attrs=None)`` -> the Out variable of a one-op program."""
    return fixtures.op_builder(math_registry)


@pytest.fixture
def check(math_registry):
    """``check(op_type, inputs, attrs=None, **kw)``: run the op through the Executor (CPU)
    and compare every output with the op's NumPy reference (headrace_math.reference)."""
    from headrace_math.reference import all_references
    return fixtures.checker(math_registry, all_references())


@pytest.fixture
def make_kernel(math_registry):
    """``make_kernel(op_type, attrs=None, dtype=None)``: the op's CPU kernel object, made as
    the executor makes it (attributes with defaults filled in), for calling it directly with
    arrays the executor would never pass (non-contiguous, read-only, mismatched)."""
    def make(op_type, attrs=None, dtype=None):
        opdef = math_registry.get(op_type)
        full = {name: a.default for name, a in opdef.attrs.items()}
        full.update(attrs or {})
        return math_registry.kernel(op_type, "cpu", dtype).fn(full, None)
    return make


@pytest.fixture(name="odd_layouts")
def _odd_layouts():
    return fixtures.odd_layouts
