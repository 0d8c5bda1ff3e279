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


def test_differentiable_and_duplicable(core_registry):
    opdef = core_registry.get("sum")
    assert opdef.differentiable and opdef.input("X").duplicable
    assert not opdef.attrs


def test_non_tensor_input_is_rejected(infer):
    with pytest.raises(ShapeError, match=r"input X \(s\) is a step_scopes variable"):
        infer("sum", {"X": [{"name": "s", "type": "step_scopes"}, ([2], "float32")]})


# -- kernels --------------------------------------------------------------------------------

import numpy as np  # noqa: E402

from headrace.runtime.tensor import Tensor, TensorArray  # noqa: E402
from headrace.core_ops.kernels.cpu.sum import Sum  # noqa: E402
from headrace.core_ops.reference.sum import REFERENCES  # noqa: E402

NUMBERS = ["float32", "float64", "int32", "int64"]


def _inputs(n, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 10).astype(dtype) for _ in range(n)]


@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("n", [1, 2, 3, 7])
@pytest.mark.parametrize("shape", [(3, 4), (5,), (1,), (2, 0), (2, 3, 4)])
def test_kernel(check, dtype, n, shape):
    out = check("sum", {"X": _inputs(n, shape, dtype)})["Out"]
    assert out.shape == shape


def test_float32_adds_in_input_order():
    # ((x0 + x1) + x2): bit-identical to NumPy's left fold, not a reordered sum.
    xs = [np.array([1e8], np.float32), np.array([1.0], np.float32),
          np.array([-1e8], np.float32)]
    assert Sum()(xs)[0][0] == (xs[0] + xs[1]) + xs[2] == 0.0


@pytest.mark.parametrize("shapes, out", [
    ([(0, 3), (2, 3)], (2, 3)), ([(2, 3), (0,), (2, 3)], (2, 3)), ([(0,), (0,)], (0,)),
    ([(0, 3), (0, 3)], (0, 3)),
])
def test_empty_inputs_are_skipped(check, shapes, out):
    xs = [np.ones(s, np.float32) for s in shapes]
    assert check("sum", {"X": xs})["Out"].shape == out


def test_odd_layouts_directly(odd_layouts):
    x = _inputs(1, (4, 6), "float64", seed=1)[0]
    views = [v for _, v in odd_layouts(x)]
    np.testing.assert_array_equal(Sum()(views)[0], x * len(views))
    np.testing.assert_array_equal(Sum()(tuple(views[:2]))[0], x + x)


def test_zero_dim_directly():
    assert Sum()([np.array(1.5), np.array(2.0)])[0] == np.array(3.5)


def test_result_is_a_new_array():
    x = np.ones(3)
    (out,) = Sum()([x])
    assert out is not x and not np.shares_memory(out, x)


def test_tensor_arrays_add_by_position():
    a = TensorArray([Tensor(np.ones(2), [[0, 1, 2]]), None, Tensor(np.ones(3))])
    b = TensorArray([Tensor(np.full(2, 2.0)), Tensor(np.zeros(0)), Tensor(np.ones(3)),
                     Tensor(np.full(1, 5.0))])
    (out,) = Sum()([a, b])
    assert isinstance(out, TensorArray) and len(out) == 4
    np.testing.assert_array_equal(out[0].data, [3.0, 3.0])
    assert out[0].lod == [[0, 1, 2]]
    assert out[1].data.shape == (0,)
    np.testing.assert_array_equal(out[2].data, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(out[3].data, [5.0])
    assert Sum()([TensorArray([None]), TensorArray()])[0] == [None]


@pytest.mark.parametrize("xs, error, msg", [
    ([np.ones((2, 3)), np.ones((3, 2))], ValueError, r"inputs differ in shape: \[2, 3\]"),
    ([np.ones(3), np.ones(4)], ValueError, r"inputs differ in shape"),
    ([np.ones(3), np.ones(3, np.float32)], TypeError, r"inputs differ in dtype"),
    ([np.ones(3, bool)], TypeError, r"dtype bool not supported"),
    ([np.ones(3, np.float16)], TypeError, r"dtype float16 not supported"),
    ([], ValueError, r"non-empty list"),
    ([TensorArray(), np.ones(3)], TypeError, r"mixes tensor arrays with tensors"),
    ([None, np.ones(3)], TypeError, r"inputs differ in dtype"),
])
def test_kernel_rejects_bad_inputs(xs, error, msg):
    with pytest.raises(error, match=rf"sum: .*{msg}"):
        Sum()(xs)


def test_kernel_rejects_a_non_list():
    with pytest.raises(ValueError, match="sum: X must be a non-empty list"):
        Sum()(np.ones(3))
    assert REFERENCES["sum"]({"X": [np.ones(2)]}, {})["Out"].tolist() == [1.0, 1.0]


# == gradients =================================================================================

import headrace  # noqa: E402
from headrace.runtime import Executor, Scope  # noqa: E402
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("n", [1, 3])
def test_gradient_finite_differences(n):
    rng = np.random.default_rng(0)
    check_grad("sum", {"X": [rng.standard_normal((2, 3)) for _ in range(n)]}, wrt=["X"])


def test_gradient_is_a_scale_op_per_wanted_input():
    prog = headrace.Program()
    block = prog.global_block()
    for name in ("a", "b", "g"):
        block.create_var(name=name, shape=[2, 3], dtype="float64", need_check_feed=True,
                         stop_gradient=name != "a")
    block.append_op("sum", {"X": ["a", "b", "a"]}, {"Out": "s"})
    (da,) = headrace.gradients([block.var("s")], [block.var("a")],
                               target_gradients=[block.var("g")])
    types = [op.type for op in block.ops]
    # b wants no gradient: two scale ops (a is listed twice) and the sum of their results.
    assert types.count("scale") == 2 and types[-1] == "sum", types
    g = np.arange(6.0).reshape(2, 3)
    (got,) = Executor().run(prog, feed={"a": np.ones((2, 3)), "b": np.ones((2, 3)), "g": g},
                            fetch_list=[da], scope=Scope())
    np.testing.assert_array_equal(got, 2 * g)
