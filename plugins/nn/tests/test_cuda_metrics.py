"""top_k and accuracy on CUDAPlace (Numba's simulator without a GPU): accuracy with more rows
than one block's threads and no rows (accuracy 0, not 0/0); top_k against the CPU kernel with
ties, NaN, int64 above 2**53, rows longer than a block, a K input, no rows and its errors."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import check_op

pytestmark = pytest.mark.cuda

PLACES = [hr.CPUPlace(), hr.CUDAPlace(0)]


@pytest.mark.parametrize("n", [70, 0])
def test_accuracy(n):
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 4, (n, 2)).astype("int64")
    lab = rng.integers(0, 4, (n, 1)).astype("int64")
    correct = int((idx == lab).any(axis=1).sum())
    check_op("accuracy", {"Out": rng.random((n, 2)).astype("float32"), "Indices": idx,
                          "Label": lab},
             {"Accuracy": np.array(correct / n if n else 0.0, np.float32),
              "Correct": np.array(correct, np.int32), "Total": np.array(n, np.int32)},
             places=PLACES)


def _top_k_both(x, k=None, k_tensor=None):
    from headrace.testing import run_op
    ins = {"X": x} if k_tensor is None else {"X": x, "K": k_tensor}
    attrs = {} if k is None else {"k": k}
    cpu, gpu = ([np.asarray(t.numpy()) for t in
                 (r["Out"][0], r["Indices"][0])]
                for r in (run_op("top_k", ins, ["Out", "Indices"], attrs, p) for p in PLACES))
    for c, g in zip(cpu, gpu):
        assert c.dtype == g.dtype and c.shape == g.shape, (c, g)
        np.testing.assert_array_equal(g, c)
    return gpu


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_top_k_ties_and_dtypes(dtype):
    x = np.array([[3, 1, 3, 2, 1], [0, 0, 0, 0, 0], [5, 4, 3, 2, 1]], dtype=dtype)
    _top_k_both(x, k=3)               # ties: the lower index first, as a stable sort


def test_top_k_long_rows_nan_and_k_tensor():
    x = np.random.default_rng(4).standard_normal((2, 70))
    x[0, 66] = x[0, 10] = np.nan
    x[1, 5] = x[1, 67] = 9.0
    _top_k_both(x, k=3)
    _top_k_both(x[:, :8], k_tensor=np.array([2], np.int32))
    big = np.array([[2**60, 2**60 + 1, 2**60 + 1]], dtype="int64")
    _top_k_both(big, k=3)
    long_big = np.full((1, 40), 2**60, dtype="int64") + np.arange(40) % 3
    _top_k_both(long_big, k=3)        # a block per row, in int64


def test_top_k_no_rows_and_errors():
    _top_k_both(np.zeros((0, 4), "float32"), k=2)
    from numba import cuda

    from headrace_nn.kernels.cuda.metrics import TopK
    with pytest.raises(ValueError, match="must be in"):
        TopK({"k": 5})(cuda.to_device(np.zeros((2, 3), "float32")))
    with pytest.raises(ValueError, match="last dim"):
        TopK({"k": 1})(cuda.to_device(np.float32(1.0)))
