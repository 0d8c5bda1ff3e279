"""sequence_scatter: Paddle's documented example, repeated ids adding up, the NumPy reference
across LoD edge cases (an empty sequence, one sequence, fewer sequences than rows, no ids),
X of rank 1 to 3 and four dtypes, the gradients of X and Updates against finite differences
(alone and through the layer), and errors: an id outside a row, more sequences than rows,
Updates with other LoD or dtype, two LoD levels, Ids not one per row."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import check_grad, program_gradients, run_op


def _scatter(x, ids, updates, lod):
    (out,) = run_op("sequence_scatter", {"X": x, "Ids": Tensor(ids, lod),
                                         "Updates": Tensor(updates, lod)})["Out"]
    return out.numpy()


def test_paddles_documented_example():
    # sequence_scatter_op.cc: X all ones [3, 6]; Ids lod [0, 3, 8, 12].
    ids = np.array([0, 1, 2, 5, 4, 3, 2, 1, 3, 2, 5, 4], np.int64)[:, None]
    upd = np.array([.3, .3, .4, .1, .2, .3, .4, .0, .2, .3, .1, .4])[:, None]
    out = _scatter(np.ones((3, 6)), ids, upd, [[0, 3, 8, 12]])
    np.testing.assert_allclose(out, [[1.3, 1.3, 1.4, 1.0, 1.0, 1.0],
                                     [1.0, 1.0, 1.4, 1.3, 1.2, 1.1],
                                     [1.0, 1.0, 1.3, 1.2, 1.4, 1.1]])


def test_repeated_ids_add_up():
    out = _scatter(np.zeros((2, 3), np.float32), np.array([[1], [1], [1]], np.int32),
                   np.array([[1], [2], [4]], np.float32), [[0, 2, 3]])
    assert out.tolist() == [[0, 3, 0], [0, 4, 0]]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("shape, lod", [
    ((4, 6), [[0, 3, 3, 7]]),        # an empty sequence, fewer sequences than rows
    ((2, 2, 3), [[0, 5]]),           # one sequence into a row flattened from [2, 3]
    ((3,), [[0, 1, 2, 3]]),          # rank 1: each row is one value
    ((3, 4), [[0, 0, 0]]),           # no ids at all
])
def test_matches_the_reference(check, dtype, shape, lod):
    rng = np.random.default_rng(0)
    cols = int(np.prod(shape[1:]))
    n = lod[0][-1]
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    ids = Tensor(rng.integers(0, cols, (n, 1)).astype(rng.choice(["int32", "int64"])), lod)
    upd = Tensor((rng.standard_normal((n, 1)) * 10).astype(dtype), lod)
    check("sequence_scatter", {"X": x, "Ids": ids, "Updates": upd})


def test_gradients_of_x_and_updates():
    rng = np.random.default_rng(1)
    lod = [[0, 3, 3, 6]]
    ids = Tensor(np.array([[0], [4], [0], [1], [2], [1]]), lod)
    upd = Tensor(rng.standard_normal((6, 1)), lod)
    check_grad("sequence_scatter", {"X": rng.standard_normal((4, 5)), "Ids": ids,
                                    "Updates": upd}, wrt=["X", "Updates"])


def test_layer_and_gradients_through_a_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3, 4], dtype="float64")
        ids = layers.data("ids", shape=[1], dtype="int64", lod_level=1)
        upd = layers.data("upd", shape=[1], dtype="float64", lod_level=1)
        x.stop_gradient = upd.stop_gradient = False
        y = layers.sequence_scatter(x, ids, upd)
        loss = layers.mean(layers.elementwise_mul(layers.tanh(y), y))
        hr.gradients(loss, [x, upd])
    assert list(y.shape) == [-1, 3, 4] and y.dtype == "float64"
    rng = np.random.default_rng(2)
    feed = {"x": rng.standard_normal((2, 3, 4)),
            "ids": create_lod_tensor(np.array([[11], [0], [5]]), [[2, 1]]),
            "upd": create_lod_tensor(rng.standard_normal((3, 1)), [[2, 1]])}
    analytic, numeric = program_gradients(main, startup, loss, ["x", "upd"], feed)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_errors():
    x, lod = np.zeros((2, 3)), [[0, 1, 2]]
    one = np.ones((2, 1))
    with pytest.raises(hr.HeadraceError, match="Ids\\[1\\] = 3 \\(sequence 1\\) is not a "
                                               "column of a row of X, which has 3 values"):
        _scatter(x, np.array([[0], [3]]), one, lod)
    with pytest.raises(hr.HeadraceError, match="Ids\\[0\\] = -1"):
        _scatter(x, np.array([[-1], [0]]), one, lod)
    with pytest.raises(hr.HeadraceError, match="Ids has 3 sequences but X only 2 rows"):
        _scatter(x, np.zeros((3, 1), np.int64), np.ones((3, 1)), [[0, 1, 2, 3]])
    with pytest.raises(hr.HeadraceError, match="Updates must have the LoD of Ids"):
        run_op("sequence_scatter", {"X": x, "Ids": Tensor(np.zeros((2, 1), np.int64), lod),
                                    "Updates": Tensor(one, [[0, 2]])})
    with pytest.raises(hr.HeadraceError, match="Ids must have one LoD level"):
        run_op("sequence_scatter", {"X": x, "Ids": Tensor(np.zeros((2, 1), np.int64),
                                                          [[0, 1], [0, 2]]),
                                    "Updates": Tensor(one, [[0, 1], [0, 2]])})
    with pytest.raises(hr.HeadraceError, match="Updates \\(updates_0\\) must have the dtype "
                                               "of X"):
        _scatter(x, np.zeros((2, 1), np.int64), one.astype(np.float32), lod)
    with pytest.raises(hr.HeadraceError, match="Ids \\(ids_0\\) must hold one value per row"):
        _scatter(x, np.zeros((2, 2), np.int64), one, lod)
    with pytest.raises(hr.HeadraceError, match="one value per id of Ids"):
        _scatter(x, np.zeros((2, 1), np.int64), np.ones((3, 1)), lod)


def test_layer_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[4], dtype="float32")
        ids = layers.data("ids", shape=[1], dtype="int64", lod_level=1)
        upd = layers.data("upd", shape=[1], dtype="float32", lod_level=1)
        with pytest.raises(hr.LayerError, match="'index' .*must have dtype int32 or int64"):
            layers.sequence_scatter(x, upd, upd)
        with pytest.raises(hr.LayerError, match="'input' must be a Variable"):
            layers.sequence_scatter(np.zeros(4), ids, upd)
        with pytest.raises(hr.HeadraceError, match="Ids \\(ids2\\) must be a sequence batch"):
            layers.sequence_scatter(x, layers.data("ids2", shape=[1], dtype="int64"), upd)
