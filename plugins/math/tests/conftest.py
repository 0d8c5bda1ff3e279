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


@pytest.fixture
def check(math_registry):
    """``check(op_type, inputs, attrs=None, **kw)``: run the op through the Executor (CPU)
    and compare every output with the op's NumPy reference (headrace_math.reference)."""
    from headrace.testing import check_op
    from headrace_math.reference import all_references
    refs = all_references()

    def run(op_type, inputs, attrs=None, **kw):
        expected = refs[op_type](inputs, dict(attrs or {}))
        check_op(op_type, inputs, expected, attrs=attrs, registry=math_registry, **kw)
        return expected
    return run


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


def odd_layouts(x):
    """``x`` (an ndarray) as arrays with the same values in layouts the executor never feeds:
    strided, Fortran-ordered, read-only, big-endian, negative strides; each paired with a label."""
    import numpy as np
    x = np.asarray(x)
    strided = np.repeat(x, 2, axis=-1)[..., ::2] if x.ndim else x
    ro = x.copy()
    ro.flags.writeable = False
    out = [("strided", strided), ("fortran", np.asfortranarray(x)), ("readonly", ro)]
    if x.dtype.kind in "fiu" and x.dtype.itemsize > 1:
        out.append(("bigendian", x.astype(x.dtype.newbyteorder(">"))))
    if x.ndim:
        out.append(("reversed", np.flip(np.flip(x, -1).copy(), -1)))   # negative strides
    return out


@pytest.fixture(name="odd_layouts")
def _odd_layouts():
    return odd_layouts
