"""top_k and accuracy: shapes, dtypes, errors."""
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
    assert accuracy(out, indices, label) == {
        "Accuracy": [((1,), "float32")], "Correct": [((1,), "int32")],
        "Total": [((1,), "int32")]}


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
