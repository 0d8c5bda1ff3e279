"""Shape/dtype inference of sum (the op that adds up gradient contributions)."""
import pytest

from headrace import ShapeError
from headrace.errors import OpValidationError


def tensors(*shapes, dtype="float32"):
    return {"X": [(s, dtype) for s in shapes]}


@pytest.mark.parametrize("shapes, out", [
    ([[2, 3]], (2, 3)),                                  # one input is allowed
    ([[2, 3], [2, 3]], (2, 3)),
    ([[2, 3]] * 5, (2, 3)),
    ([[-1, 3], [-1, 3]], (-1, 3)),
    ([[-1, 3], [2, 3]], (2, 3)),                          # a known dim wins
    ([[2, -1], [-1, 3]], (2, 3)),                         # ... from whichever input knows it
    ([[-1, -1], [-1, 4], [5, -1]], (5, 4)),
    ([[0, 3], [2, 3]], (2, 3)),                           # an empty input is skipped
    ([[2, 3], [0], [2, 3]], (2, 3)),
    ([[0], [0]], (0,)),
    ([[]], ()),
    ([[], []], ()),
])
def test_shapes(infer, shapes, out):
    assert infer("sum", tensors(*shapes)) == (out, "float32")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_dtype(infer, dtype):
    assert infer("sum", tensors([4], [4], dtype=dtype)) == ((4,), dtype)


def test_lod_of_first_input(build):
    out = build("sum", {"X": [([-1, 4], "float32", 2), ([-1, 4], "float32", 0)]})
    assert (out.shape, out.lod_level, out.kind) == ((-1, 4), 2, "lod_tensor")


@pytest.mark.parametrize("shapes, msg", [
    ([[2, 3], [3, 2]], r"X \(x_1\) has shape \[3, 2\] but X \(x_0\) has \[2, 3\]"),
    ([[2, 3], [2, 3], [2, 4]], r"X \(x_2\) has shape \[2, 4\] but X \(x_0\) has \[2, 3\]"),
    ([[2, 3], [6]], r"X \(x_1\) has shape \[6\] but X \(x_0\) has \[2, 3\]"),
    ([[-1, 3], [2, 3, 1]], r"X \(x_1\) has shape \[2, 3, 1\] but X \(x_0\) has \[-1, 3\]"),
    ([[0, 3], [2, 3], [4, 3]], r"X \(x_2\) has shape \[4, 3\] but X \(x_1\) has \[2, 3\]"),
])
def test_shape_mismatch(infer, shapes, msg):
    with pytest.raises(ShapeError, match=msg) as e:
        infer("sum", tensors(*shapes))
    assert "-1 matches any size" in str(e.value)


def test_dtype_mismatch(infer):
    inputs = {"X": [([2], "float32"), ([2], "float32"), ([2], "float64")]}
    with pytest.raises(ShapeError, match=r"inputs differ in dtype: X \(x_0\) is float32, "
                                         r"X \(x_2\) is float64"):
        infer("sum", inputs)


def test_bool_is_rejected(infer):
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_1\) has an unsupported dtype"):
        infer("sum", {"X": [([2], "float32"), ([2], "bool")]})


def test_needs_an_input(infer):
    with pytest.raises(OpValidationError, match="missing input 'X'"):
        infer("sum", {})


def _var(name, kind, shape=(2, 3)):
    return {"name": name, "shape": shape, "dtype": "float32", "type": kind}


@pytest.mark.parametrize("kinds, out_kind", [
    (["lod_tensor_array", "lod_tensor_array"], "lod_tensor_array"),
    (["selected_rows", "selected_rows"], "selected_rows"),
    (["selected_rows", "lod_tensor"], "lod_tensor"),
    (["lod_tensor", "selected_rows"], "lod_tensor"),
])
def test_out_kind(build, kinds, out_kind):
    out = build("sum", {"X": [_var(f"v{i}", k) for i, k in enumerate(kinds)]})
    assert (out.kind, out.shape) == (out_kind, (2, 3))


def test_arrays_do_not_mix(infer):
    with pytest.raises(ShapeError, match="inputs mix tensor arrays with other kinds"):
        infer("sum", {"X": [_var("a", "lod_tensor_array"), _var("b", "lod_tensor")]})


def test_differentiable_and_duplicable(math_registry):
    opdef = math_registry.get("sum")
    assert opdef.differentiable and opdef.input("X").duplicable
    assert not opdef.attrs


def test_non_tensor_input_is_rejected(infer):
    with pytest.raises(ShapeError, match=r"input X \(s\) is a step_scopes variable"):
        infer("sum", {"X": [{"name": "s", "type": "step_scopes"}, ([2], "float32")]})
