"""accuracy on CUDAPlace (Numba's simulator without a GPU): more rows than one block's threads,
and no rows (accuracy 0, not 0/0)."""
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
