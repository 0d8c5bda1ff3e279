"""sequence_reshape: Paddle's documented example, the NumPy reference across LoD edge cases
(an empty sequence, one sequence, no rows) and dtypes, widening and narrowing rows, the LoD
kept when the width stays, the gradient against finite differences (alone and through the
layer), and errors: a sequence whose values do not fill whole rows (named with its length and
the widths), two LoD levels (Paddle takes one), a rank other than 2, a bad new_dim."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import check_grad, program_gradients, run_op


def _reshape(x, new_dim):
    (out,) = run_op("sequence_reshape", {"X": x}, attrs={"new_dim": new_dim})["Out"]
    return out


def test_paddles_documented_example():
    # sequence_reshape_op.cc: lod [[0, 2, 6]], [6, 2] data 1..12, new_dim 4.
    x = Tensor(np.arange(1.0, 13.0).reshape(6, 2), [[0, 2, 6]])
    out = _reshape(x, 4)
    assert out.lod == [[0, 1, 3]]
    np.testing.assert_array_equal(out.numpy(), np.arange(1.0, 13.0).reshape(3, 4))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("lod, width, new_dim", [
    ([[0, 2, 2, 6]], 2, 4),       # an empty sequence
    ([[0, 3]], 4, 6),             # one sequence
    ([[0, 0, 0]], 3, 6),          # no rows
    ([[0, 1, 3]], 6, 2),          # narrower rows: each sequence gets longer
    ([[0, 1, 3]], 6, 6),          # the same width: the LoD is kept
])
def test_matches_the_reference(check, dtype, lod, width, new_dim):
    data = (np.random.default_rng(0).standard_normal((lod[0][-1], width)) * 10).astype(dtype)
    check("sequence_reshape", {"X": Tensor(data, lod)}, {"new_dim": new_dim})


def test_narrower_rows_lengthen_each_sequence():
    out = _reshape(Tensor(np.arange(12.0).reshape(2, 6), [[0, 1, 2]]), 3)
    assert out.lod == [[0, 2, 4]] and out.shape == (4, 3)


def test_gradient():
    x = Tensor(np.random.default_rng(1).standard_normal((6, 4)), [[0, 1, 1, 6]])
    check_grad("sequence_reshape", {"X": x}, wrt=["X"], attrs={"new_dim": 2})


def test_layer_and_gradients_through_a_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[6], dtype="float64", lod_level=1)
        x.stop_gradient = False
        y = layers.sequence_reshape(x, new_dim=4)
        pooled = layers.sequence_pool(layers.tanh(y), "sum")
        loss = layers.mean(layers.elementwise_mul(pooled, pooled))
        hr.gradients(loss, [x])
    assert y.lod_level == 1 and list(y.shape) == [-1, 4]
    feed = {"x": create_lod_tensor(np.random.default_rng(2).standard_normal((6, 6)),
                                   [[2, 0, 4]])}
    (got,) = hr.Executor().run(main, feed=feed, fetch_list=[y], scope=hr.Scope(),
                               return_numpy=False)
    assert got.lod == [[0, 3, 3, 9]]
    analytic, numeric = program_gradients(main, startup, loss, ["x"], feed)
    np.testing.assert_allclose(analytic["x"], numeric["x"], rtol=1e-6, atol=1e-8)


def test_errors():
    x = Tensor(np.zeros((5, 2)), [[0, 2, 5]])
    with pytest.raises(hr.HeadraceError, match="sequence 1 of X has 3 rows of width 2 = 6 "
                                               "values, which do not divide by new_dim 4"):
        _reshape(x, 4)
    with pytest.raises(hr.HeadraceError, match="one LoD level"):
        _reshape(Tensor(np.zeros((4, 2)), [[0, 1, 2], [0, 2, 2, 4]]), 2)
    with pytest.raises(hr.HeadraceError, match="X \\(x_0\\) must be a 2-D sequence batch"):
        _reshape(Tensor(np.zeros((4, 2, 1)), [[0, 4]]), 2)
    with pytest.raises(hr.HeadraceError, match="attribute 'new_dim' must be >= 1"):
        _reshape(Tensor(np.zeros((4, 2)), [[0, 4]]), 0)


def test_layer_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[4], dtype="float32", lod_level=1)
        with pytest.raises(hr.LayerError, match="'new_dim' must be >= 1"):
            layers.sequence_reshape(x, 0)
        with pytest.raises(hr.LayerError, match="'input' .*must have dtype"):
            layers.sequence_reshape(layers.data("b", shape=[4], dtype="bool", lod_level=1), 2)
        with pytest.raises(hr.HeadraceError, match="X \\(d\\) must be a batch of sequences"):
            layers.sequence_reshape(layers.data("d", shape=[4], dtype="float32"), 2)
