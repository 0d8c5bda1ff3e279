"""cross_entropy / cross_entropy_grad on CUDAPlace (Numba's simulator without a GPU): hard labels
with ignore_index and both label shapes, a bad label refused, soft labels, the gradients in
float64 against their closed forms. Shapes stay tiny: the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import check_op

pytestmark = pytest.mark.cuda

PLACES = [hr.CPUPlace(), hr.CUDAPlace(0)]


def _probs(n, c, seed=0):
    e = np.exp(np.random.default_rng(seed).standard_normal((n, c)))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("label_shape", ["column", "flat"])
def test_hard_labels_with_ignore_index(label_shape):
    x = _probs(4, 5)
    lab = np.array([0, 4, 2, 1], dtype="int64")
    y = -np.log(x[np.arange(4), lab])
    y[2] = 0                                    # the ignored row
    if label_shape == "column":
        lab, y = lab[:, None], y[:, None]
    check_op("cross_entropy", {"X": x, "Label": lab}, {"Y": y}, attrs={"ignore_index": 2},
             places=PLACES)
    dy = np.random.default_rng(1).standard_normal(y.shape)
    dx = np.zeros_like(x)
    flat = lab.reshape(-1)
    for i in (0, 1, 3):
        dx[i, flat[i]] = -dy.reshape(-1)[i] / x[i, flat[i]]
    check_op("cross_entropy_grad", {"X": x, "Label": lab, "Y@GRAD": dy}, {"X@GRAD": dx},
             attrs={"ignore_index": 2}, places=PLACES)


def test_a_bad_label_is_refused():
    x = _probs(3, 4)
    lab = np.array([[1], [7], [0]], dtype="int64")
    with pytest.raises(Exception, match="Label value 7"):
        check_op("cross_entropy", {"X": x, "Label": lab}, {"Y": np.zeros((3, 1))},
                 places=[hr.CUDAPlace(0)])


def test_soft_labels():
    x, lab = _probs(3, 4), _probs(3, 4, seed=2)
    y = -(lab * np.log(x)).sum(axis=1, keepdims=True)
    check_op("cross_entropy", {"X": x, "Label": lab}, {"Y": y}, attrs={"soft_label": True},
             places=PLACES)
    dy = np.random.default_rng(3).standard_normal((3, 1))
    check_op("cross_entropy_grad", {"X": x, "Label": lab, "Y@GRAD": dy},
             {"X@GRAD": -lab * dy / x}, attrs={"soft_label": True}, places=PLACES)


def test_empty_batch():
    x = np.zeros((0, 4))
    check_op("cross_entropy", {"X": x, "Label": np.zeros((0, 1), "int64")},
             {"Y": np.zeros((0, 1))}, places=PLACES)


def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_with_cross_entropy_hard(axis):
    # [2, 3, 4] with axis 1: the classes 4 apart, the loss [2, 1, 4]; position 5 is ignored.
    x = np.random.default_rng(4).standard_normal((2, 3, 4)) * 3
    c = x.shape[axis]
    lab = np.random.default_rng(5).integers(0, c, x.shape[:axis % 3] + (1,)
                                            + x.shape[axis % 3 + 1:]).astype("int64")
    lab.reshape(-1)[5] = -100
    logp = _log_softmax(x, axis)
    loss = -np.take_along_axis(logp, np.where(lab < 0, 0, lab), axis=axis)
    loss[lab == -100] = 0
    check_op("softmax_with_cross_entropy", {"Logits": x, "Label": lab},
             {"Softmax": np.exp(logp), "Loss": loss}, attrs={"axis": axis}, places=PLACES)
    sm, dl = np.exp(logp), np.random.default_rng(6).standard_normal(loss.shape)
    onehot = np.zeros_like(sm)
    np.put_along_axis(onehot, np.where(lab < 0, 0, lab), 1.0, axis=axis)
    dx = (sm - onehot) * dl * (lab != -100)
    check_op("softmax_with_cross_entropy_grad", {"Softmax": sm, "Label": lab, "Loss@GRAD": dl},
             {"Logits@GRAD": dx}, attrs={"axis": axis}, places=PLACES)


def test_softmax_with_cross_entropy_soft_and_bad_label():
    x, lab = np.random.default_rng(7).standard_normal((3, 4)), _probs(3, 4, seed=8)
    logp = _log_softmax(x, 1)
    check_op("softmax_with_cross_entropy", {"Logits": x, "Label": lab},
             {"Softmax": np.exp(logp), "Loss": -(lab * logp).sum(1, keepdims=True)},
             attrs={"soft_label": True}, places=PLACES)
    dl = np.random.default_rng(9).standard_normal((3, 1))
    check_op("softmax_with_cross_entropy_grad",
             {"Softmax": np.exp(logp), "Label": lab, "Loss@GRAD": dl},
             {"Logits@GRAD": (np.exp(logp) - lab) * dl}, attrs={"soft_label": True},
             places=PLACES)
    with pytest.raises(Exception, match="Label value 9"):
        check_op("softmax_with_cross_entropy",
                 {"Logits": x, "Label": np.array([[0], [9], [1]], dtype="int64")},
                 {"Softmax": x, "Loss": np.zeros((3, 1))}, places=[hr.CUDAPlace(0)])


def test_cross_entropy2_and_its_grad():
    x = _probs(4, 3)
    lab = np.array([[2], [0], [-100], [1]], dtype="int64")
    rows = np.array([0, 1, 3])
    match = np.zeros((4, 1))
    match[rows, 0] = x[rows, lab[rows, 0]]
    y = np.zeros((4, 1))
    y[rows, 0] = -np.log(match[rows, 0])
    check_op("cross_entropy2", {"X": x, "Label": lab}, {"Y": y, "MatchX": match},
             places=PLACES)
    dy = np.random.default_rng(11).standard_normal((4, 1))
    dx = np.zeros_like(x)
    dx[rows, lab[rows, 0]] = -dy[rows, 0] / match[rows, 0]
    check_op("cross_entropy_grad2",
             {"MatchX": match, "Label": lab, "XShape": np.zeros((4, 3, 0)), "Y@GRAD": dy},
             {"X@GRAD": dx}, places=PLACES)
