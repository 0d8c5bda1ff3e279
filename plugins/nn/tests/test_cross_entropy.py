"""cross_entropy, cross_entropy2, softmax_with_cross_entropy: shapes, dtypes, errors."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


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
