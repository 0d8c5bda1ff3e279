"""Fixtures of the math plugin's tests.

Programs are built against a registry holding only this plugin, so the tests do not depend on
the other plugins (written in parallel) loading cleanly.
"""
import pytest

import headrace_math.plugin
from headrace.ops import build_registry
from headrace.testing import build_op, infer_shapes


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
    def run(op_type, inputs, attrs=None, out="Out"):
        res = infer_shapes(op_type, inputs, attrs=attrs, registry=math_registry)
        (result,) = res[out]
        return result
    return run


@pytest.fixture
def build(math_registry):
    """``build(op_type, inputs, attrs=None)`` -> the Out variable of a one-op program."""
    def run(op_type, inputs, attrs=None, out="Out"):
        prog, op = build_op(op_type, inputs, attrs=attrs, registry=math_registry)
        return prog.global_block().var(op.output(out)[0])
    return run
