"""sequence_softmax: per-sequence softmax (empty sequences, two LoD levels, one sequence),
attention pooling trained through it with finite differences, and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import program_gradients, run_op


def test_softmax_within_each_sequence():
    x = np.array([[1.0], [2.0], [3.0], [0.5], [-1.0], [7.0]])
    (y,) = run_op("sequence_softmax", {"X": Tensor(x, [[0, 3, 3, 5, 6]])})["Out"]
    y = np.asarray(y.data)[:, 0]
    e = np.exp(x[:, 0] - [3, 3, 3, 0.5, 0.5, 7])
    want = np.concatenate([e[:3] / e[:3].sum(), e[3:5] / e[3:5].sum(), [1.0]])
    np.testing.assert_allclose(y, want, rtol=1e-12)


def test_attention_pooling_gradients():
    """Scores from a parameter, a softmax per sequence, the rows weighted by it."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64", lod_level=1)
        w = layers.create_parameter([3, 1], "float64", name="w")
        weights = layers.sequence_softmax(layers.matmul(x, w))
        out = layers.elementwise_mul(x, weights)
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    feed = {"x": create_lod_tensor(np.random.default_rng(0).standard_normal((6, 3)),
                                   [[2, 0, 4]])}
    analytic, numeric = program_gradients(main, startup, loss, ["w"], feed)
    np.testing.assert_allclose(analytic["w"], numeric["w"], rtol=1e-6, atol=1e-8)


def test_errors():
    with pytest.raises(hr.HeadraceError, match="must hold one value per row"):
        run_op("sequence_softmax", {"X": Tensor(np.zeros((4, 2)), [[0, 4]])})
    with pytest.raises(hr.HeadraceError, match="must be a sequence batch"):
        run_op("sequence_softmax", {"X": np.zeros((4, 1))})
