"""Test helpers bound to one registry, for a plugin's (or the core's) conftest fixtures.

Each returns the function a fixture hands to tests, so a conftest is one line per fixture::

    @pytest.fixture
    def check(my_registry):
        return checker(my_registry, my_plugin.reference.all_references())
"""
import numpy as np

from .build import build_op, infer_shapes
from .optest import check_op

__all__ = ["shape_inferrer", "op_builder", "checker", "odd_layouts"]


def shape_inferrer(registry):
    """``infer(op_type, inputs, attrs=None, out="Out")`` -> ``(shape, dtype)`` of the single
    variable of output ``out``, inferred at build time."""
    def infer(op_type, inputs, attrs=None, out="Out"):
        (result,) = infer_shapes(op_type, inputs, attrs=attrs, registry=registry)[out]
        return result
    return infer


def op_builder(registry):
    """``build(op_type, inputs, attrs=None, out="Out")`` -> the ``out`` Variable of a one-op
    program."""
    def build(op_type, inputs, attrs=None, out="Out"):
        prog, op = build_op(op_type, inputs, attrs=attrs, registry=registry)
        return prog.global_block().var(op.output(out)[0])
    return build


def checker(registry, references):
    """``check(op_type, inputs, attrs=None, **kw)``: run the op through the Executor and
    compare every output with ``references[op_type]``; returns the expected outputs."""
    def check(op_type, inputs, attrs=None, **kw):
        expected = references[op_type](inputs, dict(attrs or {}))
        check_op(op_type, inputs, expected, attrs=attrs, registry=registry, **kw)
        return expected
    return check


def odd_layouts(x):
    """``x`` (an ndarray) as arrays with the same values in layouts the executor never feeds:
    strided, Fortran-ordered, read-only, big-endian, negative strides; each with a label."""
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
