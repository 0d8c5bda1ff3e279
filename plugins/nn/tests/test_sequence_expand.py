"""sequence_expand: rows and sequences repeated by Y's LoD (empty sequences on either side,
ref_level), the gradient summing the copies against finite differences, and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import program_gradients, run_op


def test_rows_repeated():
    x = np.array([[1.0], [2.0], [3.0]])
    y = Tensor(np.zeros((5, 1)), [[0, 2, 2, 5]])
    (out,) = run_op("sequence_expand", {"X": x, "Y": y})["Out"]
    np.testing.assert_array_equal(np.asarray(out.data)[:, 0], [1, 1, 3, 3, 3])
    assert out.lod == [[0, 1, 2, 3, 4, 5]]


def test_ref_level_picks_the_lod_level_of_y():
    y = Tensor(np.zeros((4, 1)), [[0, 1, 3], [0, 1, 1, 4]])   # level 1 lengths 1, 0, 3
    x = np.array([[10.0], [20.0], [30.0]])
    (out,) = run_op("sequence_expand", {"X": x, "Y": y}, attrs={"ref_level": 1})["Out"]
    np.testing.assert_array_equal(np.asarray(out.data)[:, 0], [10, 30, 30, 30])
    # Level 0 has lengths 1 and 2; X's two sequences are repeated whole.
    xs = Tensor(np.array([[1.0], [2.0], [3.0]]), [[0, 2, 3]])
    (out,) = run_op("sequence_expand", {"X": xs, "Y": y}, attrs={"ref_level": 0})["Out"]
    np.testing.assert_array_equal(np.asarray(out.data)[:, 0], [1, 2, 3, 3])
    assert out.lod == [[0, 2, 3, 4]]


def test_gradient_sums_the_copies():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        w = layers.create_parameter([3, 2], "float64", name="w")
        y = layers.data("y", shape=[1], dtype="float64", lod_level=1)
        out = layers.sequence_expand(w, y)
        loss = layers.mean(layers.elementwise_mul(out, layers.tanh(out)))
        hr.append_backward(loss)
    feed = {"y": create_lod_tensor(np.zeros((5, 1)), [[2, 0, 3]])}
    analytic, numeric = program_gradients(main, startup, loss, ["w"], feed)
    np.testing.assert_allclose(analytic["w"], numeric["w"], rtol=1e-6, atol=1e-8)
    assert not analytic["w"][1].any()  # repeated zero times


def test_mismatched_counts_are_clear_errors():
    with pytest.raises(hr.HeadraceError, match="X has 2 entries, Y's LoD level 0 3 sequences"):
        run_op("sequence_expand", {"X": np.zeros((2, 1)),
                                   "Y": Tensor(np.zeros((3, 1)), [[0, 1, 2, 3]])})


def test_expand_as_takes_y_lod_and_sums_the_gradient():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        w = layers.create_parameter([3, 2], "float64", name="w")
        y = layers.data("y", shape=[1], dtype="float64", lod_level=1)
        out = layers.sequence_expand_as(w, y)
        loss = layers.mean(layers.elementwise_mul(out, layers.tanh(out)))
        hr.append_backward(loss)
    feed = {"y": create_lod_tensor(np.zeros((5, 1)), [[2, 0, 3]])}
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    (got,) = exe.run(main, feed=feed, fetch_list=[out], scope=scope, return_numpy=False)
    wv = scope.get("w").numpy()
    np.testing.assert_array_equal(np.asarray(got), wv[[0, 0, 2, 2, 2]])
    assert got.lod == [[0, 2, 2, 5]]
    analytic, numeric = program_gradients(main, startup, loss, ["w"], feed)
    np.testing.assert_allclose(analytic["w"], numeric["w"], rtol=1e-6, atol=1e-8)
