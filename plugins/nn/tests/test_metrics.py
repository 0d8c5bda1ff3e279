"""top_k and accuracy: shapes, dtypes, errors; the CPU kernels against the references."""
import numpy as np
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


# ---------------------------------------------------------------- top_k
@pytest.mark.parametrize("x, k, want", [
    ([8, 10], 1, (8, 1)), ([8, 10], 3, (8, 3)), ([8, 10], 10, (8, 10)),
    ([2, 4, 10], 5, (2, 4, 5)), ([-1, 10], 2, (-1, 2)), ([8, -1], 7, (8, 7)), ([10], 4, (4,)),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_top_k_shapes(x, k, want, dtype):
    out = infer_shapes("top_k", {"X": (x, dtype)}, attrs={"k": k})
    assert out == {"Out": [(want, dtype)], "Indices": [(want, "int64")]}


def test_top_k_with_k_tensor_has_an_unknown_last_dim():
    out = infer_shapes("top_k", {"X": ([8, 10], "float32"), "K": ([1], "int32")},
                       attrs={"k": 50})  # the attribute is overridden: no "k > 10" error
    assert out == {"Out": [((8, -1), "float32")], "Indices": [((8, -1), "int64")]}


def test_top_k_outputs_keep_the_lod_of_x():
    prog, op = build_op("top_k", {"X": ([-1, 10], "float32", 1)}, attrs={"k": 2})
    block = prog.global_block()
    assert [block.var(op.output(s)[0]).lod_level for s in ("Out", "Indices")] == [1, 1]


@pytest.mark.parametrize("inputs, attrs, error, match", [
    ({"X": ([8, 3], "float32")}, {"k": 4}, ShapeError,
     r"X \(x_0\) has 3 values in its last dim, fewer than k"),
    ({"X": ([], "float32")}, {}, ShapeError, r"must have a last dim"),
    ({"X": ([8, 3], "float32")}, {"k": 0}, OpValidationError, r"'k' must be >= 1"),
    ({"X": ([8, 3], "bool")}, {}, OpValidationError, r"input 'X' \(x_0\) has an unsupported"),
    ({"X": ([8, 3], "float32"), "K": ([1], "int64")}, {}, OpValidationError,
     r"input 'K' \(k_0\) has an unsupported dtype"),
])
def test_top_k_errors(inputs, attrs, error, match):
    with pytest.raises(error, match=match):
        infer_shapes("top_k", inputs, attrs=attrs)


# ---------------------------------------------------------------- accuracy
def accuracy(out, indices, label, label_dtype="int64", indices_dtype="int64"):
    return infer_shapes("accuracy", {"Out": (out, "float32"), "Indices": (indices, indices_dtype),
                                     "Label": (label, label_dtype)})


@pytest.mark.parametrize("out, indices, label", [
    ([8, 5], [8, 5], [8, 1]), ([-1, 5], [-1, 5], [-1, 1]), ([-1, 5], [8, 5], [-1, 1]),
    ([8, 1], [8, 1], [8, 1]), ([8, -1], [8, 3], [8, -1]),
])
def test_accuracy_outputs_are_scalars(out, indices, label):
    # 0-D, as Paddle 3 declares them.
    assert accuracy(out, indices, label) == {
        "Accuracy": [((), "float32")], "Correct": [((), "int32")],
        "Total": [((), "int32")]}


@pytest.mark.parametrize("out, indices, label, match", [
    ([8, 5], [8, 5], [8, 2], r"Label \(label_0\) must hold one class id per row"),
    ([8, 5], [8, 5], [7, 1], r"Out \(out_0\) has 8 rows but Label \(label_0\) has 7"),
    ([-1, 5], [8, 5], [7, 1], r"has 8 rows but Label \(label_0\) has 7"),
    ([8, 5], [8, 4], [8, 1], r"Out \(out_0\) and Indices \(indices_0\) disagree on the top-k"),
    ([8, 5], [8, 5], [8], r"input 'Label' \(label_0\) has the wrong rank"),
    ([8], [8, 5], [8, 1], r"input 'Out' \(out_0\) has the wrong rank"),
    ([8, 5], [8, 5, 1], [8, 1], r"input 'Indices' \(indices_0\) has the wrong rank"),
])
def test_accuracy_shape_errors(out, indices, label, match):
    with pytest.raises(ShapeError, match=match):
        accuracy(out, indices, label)


@pytest.mark.parametrize("label_dtype, indices_dtype, slot", [
    ("int32", "int64", "Label"), ("int64", "int32", "Indices"), ("float32", "int64", "Label")])
def test_accuracy_needs_int64_ids(label_dtype, indices_dtype, slot):
    with pytest.raises(OpValidationError, match=rf"input '{slot}' .* unsupported dtype"):
        accuracy([8, 5], [8, 5], [8, 1], label_dtype, indices_dtype)


# ---------------------------------------------------------------- kernels
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("shape, k", [((10,), 1), ((4, 9), 3), ((2, 3, 8), 8), ((5, 200), 17),
                                      ((0, 4), 2), ((3, 1), 1)])
def test_top_k_matches_reference(check, dtype, shape, k):
    rng = np.random.default_rng(k)
    x = rng.integers(-5, 6, shape).astype(dtype)   # few distinct values: ties everywhere
    if dtype.startswith("float"):
        x = x + rng.standard_normal(shape).astype(dtype) * (rng.random(shape) < 0.5)
    check("top_k", {"X": x}, {"k": k})


def test_top_k_ties_keep_the_lower_index_first(kernel):
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0]], np.float32)
    out, idx = kernel("top_k", {"k": 4})(x)
    np.testing.assert_array_equal(out, [[3, 3, 3, 2]])
    np.testing.assert_array_equal(idx, [[1, 2, 4, 3]])
    assert idx.dtype == np.int64


def test_top_k_ranks_nan_above_every_number(check):
    x = np.array([[1.0, np.nan, np.inf, -np.inf, np.nan]])
    check("top_k", {"X": x}, {"k": 5})


def test_top_k_extreme_ints(check):
    x = np.array([[0, np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1]], np.int64)
    check("top_k", {"X": x}, {"k": 4})


def test_top_k_takes_k_from_the_k_tensor(check, kernel):
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    out, idx = kernel("top_k", {"k": 1})(x, np.array([4], np.int32))
    assert out.shape == idx.shape == (3, 4)
    np.testing.assert_array_equal(out, -np.sort(-x, axis=1)[:, :4])


@pytest.mark.parametrize("x, k, error", [
    (np.zeros((3, 4), np.float32), 5, ValueError),
    (np.zeros((3, 0), np.float32), 1, ValueError),
    (np.float32(1.0), 1, ValueError),
    (np.zeros((3, 4), np.bool_), 1, TypeError),
    (np.zeros((3, 4), np.float16), 1, TypeError),
])
def test_top_k_rejects_bad_inputs(kernel, x, k, error):
    with pytest.raises(error, match="top_k"):
        kernel("top_k", {"k": k})(x)


@pytest.mark.parametrize("k_tensor", [np.array([0], np.int32), np.array([7], np.int32),
                                      np.array([1, 2], np.int32), np.array([1.5])])
def test_top_k_rejects_a_bad_k_tensor(kernel, k_tensor):
    with pytest.raises(ValueError, match="top_k"):
        kernel("top_k", {"k": 1})(np.zeros((2, 6), np.float32), k_tensor)


@pytest.mark.parametrize("which", ["strided", "readonly"])
def test_top_k_strided_and_readonly(kernel, variants, which):
    x = np.random.default_rng(1).standard_normal((4, 7))
    want = kernel("top_k", {"k": 3}, "float64")(x)
    got = kernel("top_k", {"k": 3}, "float64")(variants(x)[which])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n, k", [(6, 1), (10, 3), (1, 5)])
def test_accuracy_matches_reference(check, dtype, n, k):
    rng = np.random.default_rng(n + k)
    x = rng.random((n, 8)).astype(dtype)
    out = -np.sort(-x, axis=1)[:, :k]
    idx = np.argsort(-x, axis=1, kind="stable")[:, :k].astype(np.int64)
    check("accuracy", {"Out": out, "Indices": idx, "Label": rng.integers(0, 8, (n, 1))})


def test_accuracy_counts(kernel):
    idx = np.array([[0, 1], [2, 3], [4, 5]], np.int64)
    acc, correct, total = kernel("accuracy")(np.zeros((3, 2), np.float32), idx,
                                             np.array([[1], [7], [4]]))
    assert (acc.dtype, correct.dtype, total.dtype) == (np.float32, np.int32, np.int32)
    assert acc.shape == correct.shape == total.shape == ()
    assert acc == pytest.approx(2 / 3) and correct == 2 and total == 3


def test_accuracy_of_no_rows_is_zero(kernel):
    z = np.zeros((0, 2), np.int64)
    acc, correct, total = kernel("accuracy")(np.zeros((0, 2), np.float32), z, z[:, :1])
    assert (acc, correct, total) == (0.0, 0, 0)


@pytest.mark.parametrize("out, idx, label, error", [
    (np.zeros((3, 2)), np.zeros((3, 3), np.int64), np.zeros((3, 1), np.int64), ValueError),
    (np.zeros((3, 2)), np.zeros((3, 2), np.int64), np.zeros((2, 1), np.int64), ValueError),
    (np.zeros((3, 2)), np.zeros((3, 2), np.int64), np.zeros((3,), np.int64), ValueError),
    (np.zeros((3, 2)), np.zeros((3, 2), np.int32), np.zeros((3, 1), np.int64), TypeError),
    (np.zeros((3, 2)), np.zeros((3, 2), np.int64), np.zeros((3, 1), np.float64), TypeError),
    (np.zeros(6), np.zeros(6, np.int64), np.zeros((6, 1), np.int64), ValueError),
])
def test_accuracy_rejects_bad_inputs(kernel, out, idx, label, error):
    with pytest.raises(error, match="accuracy"):
        kernel("accuracy")(out, idx, label)
