"""Shape/dtype inference of the seven elementwise_* ops (one rule, checked for each op)."""
import pytest

from headrace import ShapeError
from headrace.errors import OpValidationError
from headrace_math.ops.elementwise import FORMULAS

OPS = sorted(FORMULAS)


def t(shape, dtype="float32", lod=0):
    return (shape, dtype, lod)


@pytest.fixture(params=OPS)
def ew(request, infer):
    """``ew(x, y, axis=None, xdtype, ydtype)``: the Out (shape, dtype) of the op."""
    def run(x, y, axis=None, xdtype="float32", ydtype="float32"):
        attrs = {} if axis is None else {"axis": axis}
        return infer(request.param, {"X": t(x, xdtype), "Y": t(y, ydtype)}, attrs)
    run.op = request.param
    return run


@pytest.mark.parametrize("x, y, axis, out", [
    ([2, 3], [2, 3], None, (2, 3)),
    ([2, 3, 4], [4], None, (2, 3, 4)),                    # trailing alignment
    ([2, 3, 4], [3, 4], -1, (2, 3, 4)),
    ([2, 3, 4, 5], [3, 4], 1, (2, 3, 4, 5)),              # Paddle: Y aligned at dim 1
    ([2, 3, 4, 5], [3], 1, (2, 3, 4, 5)),                 # per-channel bias, NCHW
    ([2, 3, 4], [2], 0, (2, 3, 4)),
    ([2, 3, 4], [4], 2, (2, 3, 4)),                       # axis at the last valid place
    ([2, 3, 4], [], 3, (2, 3, 4)),                        # 0-D Y goes anywhere
    ([2, 3], [2, 3], 5, (2, 3)),                          # equal ranks: axis is not used
    ([2, 1], [1, 3], None, (2, 3)),                       # both sides broadcast
    ([3], [2, 3], None, (2, 3)),                          # the larger operand may be Y
    ([3], [3, 4], 0, (3, 4)),                             # ... with axis too
    ([], [2, 3], None, (2, 3)),
    ([1], [5], None, (5,)),
    # unknown dims
    ([-1, 3], [3], None, (-1, 3)),
    ([-1, 3], [2, 3], None, (2, 3)),
    ([-1, 3], [-1, 3], None, (-1, 3)),
    ([-1, 3], [1, 3], None, (-1, 3)),
    ([2, -1, 4], [5, 4], 1, (2, 5, 4)),
    ([-1, -1], [1], None, (-1, -1)),
])
def test_broadcast_shapes(ew, x, y, axis, out):
    assert ew(x, y, axis) == (out, "float32")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_dtype_follows_inputs(ew, dtype):
    assert ew([2, 3], [3], xdtype=dtype, ydtype=dtype) == ((2, 3), dtype)


def test_lod_comes_from_x(build):
    for op in OPS:
        out = build(op, {"X": t([-1, 4], lod=2), "Y": t([4])})
        assert (out.shape, out.lod_level) == ((-1, 4), 2)


@pytest.mark.parametrize("x, y, axis, msg", [
    ([2, 3], [4], None, r"X and Y cannot be broadcast \(dim 1\)"),
    ([2, 3, 4], [3], None, r"X and Y cannot be broadcast \(dim 2\)"),
    ([2, 3], [3, 2], None, r"X and Y cannot be broadcast \(dim 0\)"),
    ([2, 3, 4], [3, 5], 1, r"X and Y cannot be broadcast \(dim 2\)"),
    ([2, 3, 4], [3, 4], 2, r"attribute 'axis' does not align Y inside X"),
    ([3, 4], [2, 3, 4], 2, r"attribute 'axis' does not align X inside Y"),
])
def test_broadcast_errors(ew, x, y, axis, msg):
    with pytest.raises(ShapeError, match=msg) as e:
        ew(x, y, axis)
    assert "expected:" in str(e.value) and "found:" in str(e.value)


def test_axis_below_minus_one_is_rejected(ew):
    with pytest.raises(OpValidationError, match=r"attribute 'axis' must be -1 \(trailing "
                                                r"alignment\) or a dim index >= 0 \(got -2\)"):
        ew([2, 3, 4], [3], axis=-2)


def test_dtype_mismatch(ew):
    with pytest.raises(ShapeError, match=r"X \(x_0\) is float32 but Y \(y_0\) is int64"):
        ew([2, 3], [3], ydtype="int64")


@pytest.mark.parametrize("slot", ["X", "Y"])
def test_bool_is_rejected(ew, slot):
    dtypes = {"xdtype": "float32", "ydtype": "float32", f"{slot.lower()}dtype": "bool"}
    with pytest.raises(OpValidationError, match=rf"input '{slot}' \({slot.lower()}_0\) has an "
                                                r"unsupported dtype"):
        ew([2], [2], **dtypes)


def test_formula_in_doc(math_registry):
    for op in OPS:
        opdef = math_registry.get(op)
        assert FORMULAS[op] in opdef.doc
        assert [s.name for s in opdef.inputs] == ["X", "Y"]
        assert {a.name: a.default for a in opdef.attrs.values()} == {"axis": -1}
        assert opdef.differentiable
