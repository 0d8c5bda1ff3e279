"""cross_entropy, cross_entropy2, softmax_with_cross_entropy: shapes, dtypes, errors; the CPU
kernels against the references."""
import numpy as np
import pytest

from headrace.errors import OpError, OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes, run_op


def ce(x, label, x_dtype="float32", label_dtype="int64", **attrs):
    return infer_shapes("cross_entropy", {"X": (x, x_dtype), "Label": (label, label_dtype)},
                        attrs=attrs)["Y"][0]


# ---------------------------------------------------------------- cross_entropy
@pytest.mark.parametrize("x, label, want", [
    ([8, 10], [8, 1], (8, 1)),
    ([4, 5, 10], [4, 5, 1], (4, 5, 1)),
    ([8, 10], [8], (8,)),                 # newer Paddle: hard labels without the trailing 1
    ([-1, 10], [-1, 1], (-1, 1)),
    ([-1, 10], [8, 1], (8, 1)),           # the known dim wins
    ([8, 10], [-1, -1], (8, 1)),
    ([10], [1], (1,)),
])
def test_hard_label_shapes(x, label, want):
    assert ce(x, label) == (want, "float32")


@pytest.mark.parametrize("x, label, want", [
    ([8, 10], [8, 10], (8, 1)), ([4, 5, 10], [4, 5, 10], (4, 5, 1)),
    ([-1, 10], [8, -1], (8, 1)),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_soft_label_shapes(x, label, want, dtype):
    assert ce(x, label, dtype, dtype, soft_label=True) == (want, dtype)


def test_y_keeps_the_lod_of_x():
    prog, op = build_op("cross_entropy", {"X": ([-1, 10], "float32", 1),
                                          "Label": ([-1, 1], "int64", 1)})
    assert prog.global_block().var(op.output("Y")[0]).lod_level == 1


@pytest.mark.parametrize("x, label, label_dtype, soft, match", [
    ([8, 10], [8, 2], "int64", False, r"hard label Label \(label_0\) must have a last dim of 1"),
    ([8, 10], [8, 1], "float32", False, r"hard label .* must hold class indices"),
    ([8, 10], [8, 1], "int32", False, r"hard label .* must hold class indices"),
    ([8, 10], [8, 10], "int64", True, r"soft label .* must have the dtype of X \(x_0\)"),
    ([8, 10], [8, 9], "float32", True, r"soft label .* has 9 classes but X \(x_0\) has 10"),
    ([8, 10], [8], "float32", True, r"soft label .* must have the rank of X"),
    ([8, 10], [7, 1], "int64", False, r"must agree on every dim but the last \(dim 0: 8 vs 7\)"),
    ([4, 5, 10], [4, 6], "int64", False, r"every dim but the last \(dim 1: 5 vs 6\)"),
    ([4, 5, 10], [4], "int64", False, r"must have X's rank \(last dim 1\) or one less"),
    ([], [], "int64", False, r"X \(x_0\) must have a class dimension"),
])
def test_cross_entropy_errors(x, label, label_dtype, soft, match):
    with pytest.raises(ShapeError, match=match):
        ce(x, label, label_dtype=label_dtype, soft_label=soft)


def test_integer_probabilities_are_rejected():
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        ce([8, 10], [8, 1], x_dtype="int64")


# ---------------------------------------------------------------- cross_entropy2
@pytest.mark.parametrize("x, label, y, xshape, match_x", [
    ([8, 10], [8, 1], (8, 1), (8, 10, 0), (8, 1)),
    ([-1, 5, 10], [-1, 5, 1], (-1, 5, 1), (-1, 5, 10, 0), (-1, 5, 1)),
    ([8, 10], [8], (8,), (8, 10, 0), (8, 1)),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy2_shapes(x, label, y, xshape, match_x, dtype):
    out = infer_shapes("cross_entropy2", {"X": (x, dtype), "Label": (label, "int64")},
                       outputs={"Y": 1, "XShape": 1, "MatchX": 1})
    assert out == {"Y": [(y, dtype)], "XShape": [(xshape, dtype)], "MatchX": [(match_x, dtype)]}


def test_cross_entropy2_creates_its_intermediates():
    prog, op = build_op("cross_entropy2", {"X": ([8, 10], "float32"),
                                           "Label": ([8, 1], "int64")})
    block = prog.global_block()
    assert block.var(op.output("XShape")[0]).shape == (8, 10, 0)
    assert block.var(op.output("MatchX")[0]).shape == (8, 1)


@pytest.mark.parametrize("label, dtype, error, match", [
    ([8, 1], "float32", OpValidationError, r"input 'Label' \(label_0\) has an unsupported dtype"),
    ([8, 3], "int64", ShapeError, r"must have a last dim of 1"),
    ([9, 1], "int64", ShapeError, r"dim 0: 8 vs 9"),
])
def test_cross_entropy2_errors(label, dtype, error, match):
    with pytest.raises(error, match=match):
        infer_shapes("cross_entropy2", {"X": ([8, 10], "float32"), "Label": (label, dtype)})


# ---------------------------------------------------------------- softmax_with_cross_entropy
def swce(logits, label, label_dtype="int64", dtype="float32", **attrs):
    out = infer_shapes("softmax_with_cross_entropy",
                       {"Logits": (logits, dtype), "Label": (label, label_dtype)},
                       outputs={"Softmax": 1, "Loss": 1}, attrs=attrs)
    return out["Softmax"][0][0], out["Loss"][0][0]


@pytest.mark.parametrize("logits, label, attrs, loss", [
    ([8, 10], [8, 1], {}, (8, 1)),
    ([4, 5, 10], [4, 5, 1], {}, (4, 5, 1)),
    ([2, 10, 4, 4], [2, 1, 4, 4], {"axis": 1}, (2, 1, 4, 4)),
    ([2, 10, 4, 4], [2, 1, 4, 4], {"axis": -3}, (2, 1, 4, 4)),
    ([-1, 10], [-1, 1], {}, (-1, 1)),
    ([10], [1], {}, (1,)),
])
@pytest.mark.parametrize("label_dtype", ["int64", "int32"])
def test_swce_hard_label_shapes(logits, label, attrs, loss, label_dtype):
    assert swce(logits, label, label_dtype, **attrs) == (tuple(logits), loss)


@pytest.mark.parametrize("logits, label, attrs, softmax, loss", [
    ([8, 10], [8, 10], {}, (8, 10), (8, 1)),
    ([2, 10, 4], [2, 10, 4], {"axis": 1}, (2, 10, 4), (2, 1, 4)),
    ([-1, 10], [8, -1], {}, (8, 10), (8, 1)),   # known dims merge into both outputs
])
def test_swce_soft_label_shapes(logits, label, attrs, softmax, loss):
    assert swce(logits, label, "float64", "float64", soft_label=True, **attrs) == (softmax, loss)


def test_swce_unknown_batch_takes_the_label_dim():
    assert swce([-1, 10], [8, 1]) == ((8, 10), (8, 1))


def test_swce_only_loss_is_bound_by_default_and_dtype_follows_logits():
    prog, op = build_op("softmax_with_cross_entropy", {"Logits": ([-1, 10], "float64", 1),
                                                       "Label": ([-1, 1], "int64")})
    block = prog.global_block()
    loss, softmax = block.var(op.output("Loss")[0]), block.var(op.output("Softmax")[0])
    assert (loss.shape, loss.dtype, loss.lod_level) == ((-1, 1), "float64", 1)
    assert (softmax.shape, softmax.dtype) == ((-1, 10), "float64")


@pytest.mark.parametrize("logits, label, label_dtype, attrs, match", [
    ([8, 10], [8, 1], "int64", {"axis": 2}, r"attribute 'axis' is out of range"),
    ([8, 10], [8, 1], "int64", {"axis": -3}, r"attribute 'axis' is out of range"),
    ([8, 10, 3], [8, 1, 3], "int64", {"axis": 1, "numeric_stable_mode": False},
     r"'axis' must be the last axis when numeric_stable_mode is false"),
    ([8, 10], [8, 2], "int64", {}, r"hard label Label \(label_0\) must have size 1 on axis 1"),
    ([8, 10], [8, 1], "float32", {}, r"hard label .* must hold class indices"),
    ([8, 10], [8, 10], "int64", {"soft_label": True}, r"soft label .* dtype of Logits"),
    ([8, 10], [8, 9], "float32", {"soft_label": True},
     r"soft label .* has 9 classes on axis 1 but Logits \(logits_0\) has 10"),
    ([8, 10], [7, 1], "int64", {}, r"every dim but axis 1 \(dim 0: 8 vs 7\)"),
    ([8, 10], [8], "int64", {}, r"Label \(label_0\) must have the rank of Logits"),
    ([], [], "int64", {}, r"Logits \(logits_0\) must have a class dimension"),
])
def test_swce_errors(logits, label, label_dtype, attrs, match):
    with pytest.raises(ShapeError, match=match):
        swce(logits, label, label_dtype, **attrs)


@pytest.mark.parametrize("attrs, match", [
    ({"soft_label": 1}, r"'soft_label' is not of type bool"),
    ({"ignore_index": "x"}, r"'ignore_index' is not of type int"),
    ({"use_softmax": None}, r"'use_softmax' is not of type bool"),
])
def test_swce_attribute_errors(attrs, match):
    with pytest.raises(OpValidationError, match=match):
        swce([8, 10], [8, 1], **attrs)


# ---------------------------------------------------------------- kernels
DTYPES = ["float32", "float64"]


def probs(rng, shape, dtype):
    p = rng.random(shape) + 0.01
    return (p / p.sum(axis=-1, keepdims=True)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape, label_shape", [
    ((8, 10), (8, 1)), ((4, 5, 10), (4, 5, 1)), ((8, 10), (8,)), ((1, 1), (1, 1)),
    ((0, 3), (0, 1))])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy_hard_labels(check, dtype, x_shape, label_shape, ignore_index):
    rng = np.random.default_rng(1)
    x = probs(rng, x_shape, dtype)
    label = rng.integers(0, x_shape[-1], label_shape)
    check("cross_entropy", {"X": x, "Label": label}, {"ignore_index": ignore_index})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (2, 3, 5)])
def test_cross_entropy_soft_labels(check, dtype, shape):
    rng = np.random.default_rng(2)
    check("cross_entropy", {"X": probs(rng, shape, dtype), "Label": probs(rng, shape, dtype)},
          {"soft_label": True})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("label_shape", [(5, 1), (5,)])
def test_cross_entropy2_outputs(check, kernel, dtype, label_shape):
    rng = np.random.default_rng(3)
    x = probs(rng, (5, 4), dtype)
    label = np.array([0, 3, 1, 1, 2]).reshape(label_shape)
    check("cross_entropy2", {"X": x, "Label": label}, {"ignore_index": 1})
    y, xshape, match = kernel("cross_entropy2", {"ignore_index": 1}, dtype)(x, label)
    assert xshape.shape == (5, 4, 0) and xshape.dtype == dtype
    np.testing.assert_array_equal(match[:, 0], [x[0, 0], x[1, 3], 0, 0, x[4, 2]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis", [((6, 5), -1), ((3, 5, 4), 1), ((2, 3, 4), 0),
                                         ((2, 3, 4, 2), -2), ((7,), 0)])
@pytest.mark.parametrize("label_dtype", ["int64", "int32"])
def test_softmax_with_cross_entropy_hard(check, dtype, shape, axis, label_dtype):
    rng = np.random.default_rng(4)
    logits = (rng.standard_normal(shape) * 4).astype(dtype)
    lshape = list(shape)
    lshape[axis] = 1
    label = rng.integers(0, shape[axis], lshape).astype(label_dtype)
    label.reshape(-1)[0] = 1
    check("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
          {"axis": axis, "ignore_index": 1})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis", [((6, 5), -1), ((3, 5, 4), 1)])
def test_softmax_with_cross_entropy_soft(check, dtype, shape, axis):
    rng = np.random.default_rng(5)
    logits = (rng.standard_normal(shape) * 4).astype(dtype)
    label = np.moveaxis(probs(rng, np.moveaxis(np.zeros(shape), axis, -1).shape, dtype), -1, axis)
    check("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
          {"axis": axis, "soft_label": True})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("soft", [False, True])
def test_softmax_with_cross_entropy_without_softmax(check, dtype, soft):
    rng = np.random.default_rng(6)
    p = probs(rng, (4, 6), dtype)
    label = probs(rng, (4, 6), dtype) if soft else rng.integers(0, 6, (4, 1))
    check("softmax_with_cross_entropy", {"Logits": p, "Label": label},
          {"use_softmax": False, "soft_label": soft})


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_with_cross_entropy_is_stable(kernel, dtype):
    logits = np.array([[1000.0, 0.0, -1000.0]], dtype)
    sm, loss = kernel("softmax_with_cross_entropy", {}, dtype)(logits, np.array([[2]]))
    assert np.isfinite(loss).all() and loss[0, 0] == pytest.approx(2000.0)
    np.testing.assert_allclose(sm, [[1.0, 0.0, 0.0]])


@pytest.mark.parametrize("op, make", [
    ("cross_entropy", lambda x, l: (x, l)),
    ("cross_entropy2", lambda x, l: (x, l)),
    ("softmax_with_cross_entropy", lambda x, l: (x, l)),
])
@pytest.mark.parametrize("bad", [4, -1, 2 ** 40, -2 ** 62])
def test_labels_out_of_range_raise(kernel, op, make, bad):
    x = np.full((3, 4), 0.25, np.float32)
    label = np.array([[0], [bad], [1]])
    with pytest.raises(IndexError, match=f"{op}: Label value {bad}"):
        kernel(op)(*make(x, label))


def test_labels_out_of_range_are_an_op_error():
    x = np.full((3, 4), 0.25, np.float32)
    with pytest.raises(OpError, match="out of range for 4 classes"):
        run_op("cross_entropy", {"X": x, "Label": np.array([[0], [9], [1]])})


@pytest.mark.parametrize("op, x, label, error", [
    ("cross_entropy", np.zeros((3, 4), np.float32), np.zeros((4, 1), np.int64), ValueError),
    ("cross_entropy", np.zeros((3, 4), np.float32), np.zeros((3, 2), np.int64), ValueError),
    ("cross_entropy", np.zeros((3, 4), np.float32), np.zeros((3, 1), np.int32), TypeError),
    ("cross_entropy", np.zeros(3, np.int64), np.zeros((3, 1), np.int64), TypeError),
    ("cross_entropy", np.float32(1.0), np.zeros((), np.int64), ValueError),
    ("cross_entropy2", np.zeros((3, 4)), np.zeros((3, 1), np.float64), TypeError),
    ("softmax_with_cross_entropy", np.zeros((3, 4)), np.zeros((3, 4), np.int64), ValueError),
    ("softmax_with_cross_entropy", np.zeros((3, 0)), np.zeros((3, 1), np.int64), ValueError),
    ("softmax_with_cross_entropy", np.zeros((3, 4)), np.zeros((3,), np.int64), ValueError),
    ("softmax_with_cross_entropy", np.zeros((3, 4)), None, TypeError),
])
def test_bad_inputs_raise(kernel, op, x, label, error):
    with pytest.raises(error, match=op):
        kernel(op, {}, "float64")(x, label)


@pytest.mark.parametrize("op, attrs", [("cross_entropy", {"soft_label": True}),
                                       ("softmax_with_cross_entropy", {"soft_label": True})])
def test_soft_labels_must_match_x(kernel, op, attrs):
    with pytest.raises(ValueError, match="soft Label"):
        kernel(op, attrs, "float64")(np.ones((3, 4)), np.ones((3, 5)))
    with pytest.raises(TypeError, match="soft Label"):
        kernel(op, attrs, "float64")(np.ones((3, 4)), np.ones((3, 4), np.float32))


@pytest.mark.parametrize("which", ["strided", "readonly"])
@pytest.mark.parametrize("op", ["cross_entropy", "cross_entropy2", "softmax_with_cross_entropy"])
def test_strided_and_readonly_inputs(kernel, variants, op, which):
    rng = np.random.default_rng(7)
    x, label = probs(rng, (5, 6), "float64"), rng.integers(0, 6, (5, 1))
    want = kernel(op, {}, "float64")(x, label)
    got = kernel(op, {}, "float64")(variants(x)[which], variants(label)[which])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------- gradients
from headrace.testing import check_grad  # noqa: E402


def _probs(rng, shape):
    p = rng.random(shape) + 0.2
    return p / p.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("label_shape", [(5, 1), (5,)])
def test_cross_entropy_gradient_hard(label_shape):
    rng = np.random.default_rng(0)
    label = np.array([0, 3, 2, 3, 1]).reshape(label_shape)
    check_grad("cross_entropy", {"X": _probs(rng, (5, 4)), "Label": label}, wrt=["X"],
               attrs={"ignore_index": 3})


def test_cross_entropy_gradient_soft():
    rng = np.random.default_rng(1)
    x, label = _probs(rng, (2, 3, 4)), _probs(rng, (2, 3, 4))
    check_grad("cross_entropy", {"X": x, "Label": label}, wrt=["X"],
               attrs={"soft_label": True})


def test_cross_entropy2_gradient_reads_matchx_with_ignore_index():
    rng = np.random.default_rng(2)
    label = np.array([[[1], [0], [2]], [[2], [3], [0]]])
    check_grad("cross_entropy2", {"X": _probs(rng, (2, 3, 4)), "Label": label}, wrt=["X"],
               attrs={"ignore_index": 0})


@pytest.mark.parametrize("shape, axis, label_dtype", [
    ((6, 5), -1, np.int64), ((3, 5, 4), 1, np.int64), ((4, 3), 0, np.int32)])
def test_softmax_with_cross_entropy_gradient_hard_with_ignore_index(shape, axis, label_dtype):
    rng = np.random.default_rng(3)
    lshape = list(shape)
    lshape[axis] = 1
    label = rng.integers(0, shape[axis], lshape).astype(label_dtype)
    label.reshape(-1)[1] = -1   # ignored: its logits get no gradient
    check_grad("softmax_with_cross_entropy",
               {"Logits": rng.standard_normal(shape) * 2, "Label": label}, wrt=["Logits"],
               attrs={"axis": axis, "ignore_index": -1})


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("shape, axis", [((4, 5), -1), ((2, 3, 4), 1)])
def test_softmax_with_cross_entropy_gradient_soft(shape, axis, normalized):
    rng = np.random.default_rng(4)
    label = rng.random(shape)
    if normalized:
        label /= label.sum(axis=axis, keepdims=True)
    check_grad("softmax_with_cross_entropy",
               {"Logits": rng.standard_normal(shape), "Label": label}, wrt=["Logits"],
               attrs={"axis": axis, "soft_label": True})


@pytest.mark.parametrize("soft", [False, True])
def test_softmax_with_cross_entropy_gradient_without_softmax(soft):
    rng = np.random.default_rng(5)
    probs = _probs(rng, (4, 3))
    label = _probs(rng, (4, 3)) if soft else np.array([[0], [2], [1], [2]])
    check_grad("softmax_with_cross_entropy", {"Logits": probs, "Label": label},
               wrt=["Logits"], attrs={"soft_label": soft, "use_softmax": False})


def test_softmax_with_cross_entropy_gradient_is_softmax_minus_onehot(kernel):
    sm = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    (dx,) = kernel("softmax_with_cross_entropy_grad", {"ignore_index": 1}, "float64")(
        sm, np.array([[2], [1]]), np.array([[2.0], [3.0]]))
    np.testing.assert_allclose(dx, [[0.4, 1.0, -1.4], [0, 0, 0]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["cross_entropy_grad", "cross_entropy_grad2",
                                "softmax_with_cross_entropy_grad"])
def test_grad_kernels_match_references(check, op, dtype):
    from headrace_nn.reference.cross_entropy import SAMPLES
    for seed in range(3):
        inputs, attrs = SAMPLES[op](np.random.default_rng(seed), dtype)
        check(op, inputs, attrs)


@pytest.mark.parametrize("op, args, error, match", [
    ("cross_entropy_grad", (np.full((2, 3), 0.5), np.array([[1], [3]]), np.ones((2, 1))),
     IndexError, r"Label value 3 \(row 1\) is out of range for 3 classes"),
    ("cross_entropy_grad", (np.full((2, 3), 0.5), np.array([[1], [2]]), np.ones((2, 2))),
     ValueError, r"Y@GRAD\[2, 2\] must have Y's shape \[2, 1\]"),
    ("cross_entropy_grad2", (np.ones((2, 1)), np.array([[1], [7]]), np.empty((2, 3, 0)),
                             np.ones((2, 1))), IndexError, r"Label value 7"),
    ("cross_entropy_grad2", (np.ones((2, 1)), np.array([[1], [2]]), np.empty((2, 3)),
                             np.ones((2, 1))), ValueError, r"XShape\[2, 3\] must be X.dims"),
    ("softmax_with_cross_entropy_grad", (np.full((2, 3), 0.3), np.array([[1], [-5]]),
                                         np.ones((2, 1))), IndexError, r"Label value -5"),
    ("softmax_with_cross_entropy_grad", (np.full((2, 3), 0.3), np.array([[1], [2]]),
                                         np.ones((2, 1), np.float32)), TypeError,
     r"Loss@GRAD has dtype float32"),
    ("softmax_with_cross_entropy_grad", (np.full((2, 3), 0.3), np.array([1, 2]),
                                         np.ones((2, 1))), ValueError, r"hard Label\[2\]"),
])
def test_grad_kernels_reject_bad_inputs(kernel, op, args, error, match):
    with pytest.raises(error, match=f"{op}: {match}"):
        kernel(op, {}, "float64")(*args)
