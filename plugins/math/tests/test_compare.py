"""Shape/dtype inference of the six comparison ops."""
import pytest

from headrace import ShapeError
from headrace.errors import OpValidationError
from headrace_math.ops.compare import RELATIONS

OPS = sorted(RELATIONS)


@pytest.fixture(params=OPS)
def cmp(request, infer):
    """``cmp(x, y, axis=None, xdtype, ydtype)``: the Out (shape, dtype) of the comparison."""
    def run(x, y, axis=None, xdtype="float32", ydtype="float32"):
        attrs = {} if axis is None else {"axis": axis}
        return infer(request.param, {"X": (x, xdtype), "Y": (y, ydtype)}, attrs)
    return run


@pytest.mark.parametrize("x, y, axis, out", [
    ([2, 3], [2, 3], None, (2, 3)),
    ([2, 3], [3], None, (2, 3)),
    ([2, 3], [1], None, (2, 3)),                 # a scalar-like threshold
    ([2, 3], [], None, (2, 3)),
    ([1], [1], None, (1,)),                      # the while loop's `i < n`
    ([2, 3, 4], [3], 1, (2, 3, 4)),
    ([3], [2, 3], None, (2, 3)),
    ([-1, 3], [3], None, (-1, 3)),
    ([-1, 3], [2, 1], None, (2, 3)),
    ([-1], [-1], None, (-1,)),
])
def test_shapes_and_bool_out(cmp, x, y, axis, out):
    assert cmp(x, y, axis) == (out, "bool")


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64",
                                   "float16", "float32", "float64"])
def test_input_dtypes(cmp, dtype):
    assert cmp([2], [2], xdtype=dtype, ydtype=dtype) == ((2,), "bool")


@pytest.mark.parametrize("x, y, axis, msg", [
    ([2, 3], [4], None, r"X and Y cannot be broadcast \(dim 1\)"),
    ([2, 3, 4], [3, 4], 2, r"attribute 'axis' does not align Y inside X"),
])
def test_broadcast_errors(cmp, x, y, axis, msg):
    with pytest.raises(ShapeError, match=msg):
        cmp(x, y, axis)


def test_axis_below_minus_one(cmp):
    with pytest.raises(OpValidationError, match=r"'axis' must be -1 .*\(got -3\)"):
        cmp([2, 3], [3], axis=-3)


def test_dtype_mismatch(cmp):
    with pytest.raises(ShapeError, match=r"X \(x_0\) is int64 but Y \(y_0\) is int32"):
        cmp([1], [1], xdtype="int64", ydtype="int32")


def test_complex_is_rejected(cmp):
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        cmp([1], [1], xdtype="complex64", ydtype="complex64")


def test_lod_and_attrs(math_registry, build):
    for op in OPS:
        out = build(op, {"X": ([-1, 1], "int64", 1), "Y": ([1], "int64")}, {"force_cpu": True})
        assert (out.shape, out.dtype, out.lod_level) == ((-1, 1), "bool", 1)
        opdef = math_registry.get(op)
        assert not opdef.differentiable
        assert {n: a.default for n, a in opdef.attrs.items()} == {"axis": -1,
                                                                   "force_cpu": False}
        assert RELATIONS[op] in opdef.doc
