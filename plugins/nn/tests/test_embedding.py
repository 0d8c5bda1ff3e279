"""lookup_table and lookup_table_v2: shapes, dtypes, padding_idx, errors; the CPU kernels against
the references."""
import numpy as np
import pytest

from headrace.errors import OpError, OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes, run_op


def lookup(op_type, ids, ids_dtype="int64", w=(100, 16), w_dtype="float32", **attrs):
    return infer_shapes(op_type, {"W": (list(w), w_dtype), "Ids": (ids, ids_dtype)},
                        attrs=attrs)["Out"][0]


@pytest.mark.parametrize("ids, want", [
    ([8, 1], (8, 16)), ([4, 5, 1], (4, 5, 16)), ([-1, 1], (-1, 16)), ([8, -1], (8, 16)),
    ([1], (16,)),
])
@pytest.mark.parametrize("w_dtype", ["float32", "float64", "float16"])
def test_lookup_table_shapes(ids, want, w_dtype):
    assert lookup("lookup_table", ids, w_dtype=w_dtype) == (want, w_dtype)


@pytest.mark.parametrize("ids, want", [
    ([8], (8, 16)), ([4, 5], (4, 5, 16)), ([8, 1], (8, 1, 16)), ([-1, -1], (-1, -1, 16)),
    ([], (16,)),
])
@pytest.mark.parametrize("ids_dtype", ["int32", "int64"])
def test_lookup_table_v2_shapes(ids, want, ids_dtype):
    assert lookup("lookup_table_v2", ids, ids_dtype) == (want, "float32")


@pytest.mark.parametrize("op_type, ids", [("lookup_table", [-1, 1]), ("lookup_table_v2", [-1])])
def test_out_keeps_the_lod_of_ids(op_type, ids):
    prog, op = build_op(op_type, {"W": ([10, 4], "float32"), "Ids": (ids, "int64", 1)})
    assert prog.global_block().var(op.output("Out")[0]).lod_level == 1


@pytest.mark.parametrize("op_type", ["lookup_table", "lookup_table_v2"])
@pytest.mark.parametrize("padding_idx, w", [(-1, (100, 16)), (0, (100, 16)), (99, (100, 16)),
                                            (1000, (-1, 16))])
def test_valid_padding_idx(op_type, padding_idx, w):
    assert lookup(op_type, [8, 1], w=w, padding_idx=padding_idx)[0][-1] == 16


@pytest.mark.parametrize("op_type, ids, w, attrs, match", [
    ("lookup_table", [8, 2], (100, 16), {}, r"Ids \(ids_0\) must end in a dim of 1"),
    ("lookup_table", [], (100, 16), {}, r"Ids \(ids_0\) must end in a dim of 1"),
    ("lookup_table", [8, 1], (100, 16, 1), {}, r"input 'W' \(w_0\) has the wrong rank"),
    ("lookup_table_v2", [8], (100,), {}, r"input 'W' \(w_0\) has the wrong rank"),
    ("lookup_table", [8, 1], (100, 16), {"padding_idx": 100},
     r"'padding_idx' is not a row of W \(w_0\)"),
    ("lookup_table_v2", [8], (10, 16), {"padding_idx": 10},
     r"expected: -1 or an index in \[0, 9\]"),
])
def test_shape_errors(op_type, ids, w, attrs, match):
    with pytest.raises(ShapeError, match=match):
        lookup(op_type, ids, w=w, **attrs)


@pytest.mark.parametrize("op_type, ids_dtype, w_dtype, attrs, match", [
    ("lookup_table", "int32", "float32", {}, r"input 'Ids' \(ids_0\) has an unsupported dtype"),
    ("lookup_table_v2", "float32", "float32", {}, r"input 'Ids' .* unsupported dtype"),
    ("lookup_table_v2", "int64", "int64", {}, r"input 'W' \(w_0\) has an unsupported dtype"),
    ("lookup_table", "int64", "float32", {"padding_idx": -2}, r"'padding_idx' must be >= -1"),
    ("lookup_table_v2", "int64", "float32", {"is_sparse": "yes"}, r"'is_sparse' is not of type"),
])
def test_validation_errors(op_type, ids_dtype, w_dtype, attrs, match):
    with pytest.raises(OpValidationError, match=match):
        lookup(op_type, [8, 1], ids_dtype, w_dtype=w_dtype, **attrs)


def test_padding_idx_is_a_64_bit_attribute():
    prog, op = build_op("lookup_table", {"W": ([10, 4], "float32"), "Ids": ([2, 1], "int64")},
                        attrs={"padding_idx": 3})
    assert op.attr_type("padding_idx") == "long" and op.attr("padding_idx") == 3


# ---------------------------------------------------------------- kernels
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ids_shape", [(5, 1), (2, 3, 1), (1, 1), (0, 1)])
@pytest.mark.parametrize("padding_idx", [-1, 0, 4])
def test_lookup_table_matches_reference(check, dtype, ids_shape, padding_idx):
    rng = np.random.default_rng(len(ids_shape))
    w = rng.standard_normal((7, 5)).astype(dtype)
    ids = rng.integers(0, 7, ids_shape)
    ids.reshape(-1)[:1] = 4
    check("lookup_table", {"W": w, "Ids": ids}, {"padding_idx": padding_idx})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ids_dtype", ["int32", "int64"])
@pytest.mark.parametrize("ids_shape", [(5,), (2, 3), (2, 3, 4), (0,)])
def test_lookup_table_v2_matches_reference(check, dtype, ids_dtype, ids_shape):
    rng = np.random.default_rng(len(ids_shape) + 10)
    w = rng.standard_normal((9, 3)).astype(dtype)
    ids = rng.integers(0, 9, ids_shape).astype(ids_dtype)
    check("lookup_table_v2", {"W": w, "Ids": ids}, {"padding_idx": 2})


def test_padding_rows_give_zeros(kernel):
    w = np.arange(12.0).reshape(4, 3)
    (out,) = kernel("lookup_table_v2", {"padding_idx": 1}, "float64")(w, np.array([1, 2, 1]))
    np.testing.assert_array_equal(out, [[0, 0, 0], [6, 7, 8], [0, 0, 0]])


@pytest.mark.parametrize("op, ids", [
    ("lookup_table", np.array([[0], [7]])), ("lookup_table", np.array([[-1]])),
    ("lookup_table_v2", np.array([3, 2 ** 40])), ("lookup_table_v2", np.array([-5], np.int32)),
    ("lookup_table_v2", np.array([2 ** 31 - 1], np.int32)),
])
def test_ids_out_of_range_raise(kernel, op, ids):
    with pytest.raises(IndexError, match=f"{op}: id"):
        kernel(op, {}, "float32")(np.ones((7, 2), np.float32), ids)


def test_ids_out_of_range_are_an_op_error():
    with pytest.raises(OpError, match="out of range"):
        run_op("lookup_table_v2", {"W": np.ones((3, 2), np.float32), "Ids": np.array([3])})


@pytest.mark.parametrize("op, w, ids, attrs, error", [
    ("lookup_table", np.ones((4, 2)), np.array([1, 2]), {}, ValueError),    # no trailing 1
    ("lookup_table", np.ones((4, 2)), np.array([[1]], np.int32), {}, TypeError),
    ("lookup_table_v2", np.ones((4, 2)), np.array([1.0]), {}, TypeError),
    ("lookup_table_v2", np.ones(4), np.array([1]), {}, ValueError),
    ("lookup_table_v2", np.ones((4, 2), np.int64), np.array([1]), {}, TypeError),
    ("lookup_table_v2", np.ones((4, 2)), np.array([1]), {"padding_idx": 4}, ValueError),
])
def test_bad_inputs_raise(kernel, op, w, ids, attrs, error):
    with pytest.raises(error, match=op):
        kernel(op, attrs, "float64")(w, ids)


@pytest.mark.parametrize("which", ["strided", "readonly"])
def test_strided_and_readonly(kernel, variants, which):
    rng = np.random.default_rng(5)
    w, ids = rng.standard_normal((6, 4)), rng.integers(0, 6, (3, 5))
    (want,) = kernel("lookup_table_v2", {}, "float64")(w, ids)
    (got,) = kernel("lookup_table_v2", {}, "float64")(variants(w)[which], variants(ids)[which])
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- gradient
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("padding_idx", [-1, 2])
def test_lookup_table_gradient_with_repeated_ids(padding_idx):
    rng = np.random.default_rng(3)
    ids = np.array([[[1], [2]], [[1], [4]], [[2], [1]]])   # 1 three times, 2 twice
    check_grad("lookup_table", {"W": rng.standard_normal((6, 3)), "Ids": ids}, wrt=["W"],
               attrs={"padding_idx": padding_idx})


@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64])
def test_lookup_table_v2_gradient_with_repeated_ids_and_padding(ids_dtype):
    rng = np.random.default_rng(4)
    ids = np.array([[0, 3, 3], [5, 0, 3]], ids_dtype)
    check_grad("lookup_table_v2", {"W": rng.standard_normal((6, 2)), "Ids": ids}, wrt=["W"],
               attrs={"padding_idx": 0})


def test_grad_accumulates_repeated_ids_and_skips_padding(kernel):
    ids = np.array([[2], [0], [2], [1]])
    dout = np.arange(8.0).reshape(4, 2)
    (dw,) = kernel("lookup_table_grad", {"padding_idx": 1}, "float64")(np.zeros((3, 2)), ids,
                                                                        dout)
    np.testing.assert_array_equal(dw, [[2, 3], [0, 0], [0 + 4, 1 + 5]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["lookup_table_grad", "lookup_table_v2_grad"])
def test_grad_kernels_match_references(check, dtype, op):
    from headrace_nn.reference.embedding import SAMPLES
    for seed in range(3):
        inputs, attrs = SAMPLES[op](np.random.default_rng(seed), dtype)
        check(op, inputs, attrs)


@pytest.mark.parametrize("op, ids, dout, error, match", [
    ("lookup_table_grad", np.array([[1], [7]]), np.ones((2, 2)), IndexError,
     r"id 7 \(position 1\) is out of range for W with 4 rows"),
    ("lookup_table_grad", np.array([[1], [2]]), np.ones((2, 3)), ValueError,
     r"Out@GRAD\[2, 3\] must have Out's shape \[2, 2\]"),
    ("lookup_table_v2_grad", np.array([1, -1], np.int32), np.ones((2, 2)), IndexError,
     r"id -1"),
    ("lookup_table_v2_grad", np.array([1.0, 2.0]), np.ones((2, 2)), TypeError, r"Ids has dtype"),
])
def test_grad_kernels_reject_bad_inputs(kernel, op, ids, dout, error, match):
    with pytest.raises(error, match=f"{op}: {match}"):
        kernel(op, {}, "float64")(np.zeros((4, 2)), ids, dout)
