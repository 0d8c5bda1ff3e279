"""sequence_concat: Paddle's documented example, the NumPy reference across LoD edge cases
(empty sequences in one input or in all, one sequence, no rows) and dtypes, rows of different
dims but as many features (as Paddle accepts), the gradient of every input against finite
differences (alone and through the layer), and errors: too few inputs, sequence counts that
differ, two LoD levels (refused: Paddle would slice rows by the first level's sub-sequence
offsets), features that differ, and the layer's arguments."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import check_grad, program_gradients, run_op


def _concat(*xs):
    (out,) = run_op("sequence_concat", {"X": list(xs)})["Out"]
    return out


def test_paddles_documented_example():
    # sequence_concat_op.cc: LoD [0, 3, 7] with [0, 7, 9] gives [0, 10, 16].
    a = Tensor(np.arange(7.0)[:, None], [[0, 3, 7]])
    b = Tensor(100 + np.arange(9.0)[:, None], [[0, 7, 9]])
    out = _concat(a, b)
    assert out.lod == [[0, 10, 16]]
    want = np.concatenate([a.data[:3], b.data[:7], a.data[3:], b.data[7:]])
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
@pytest.mark.parametrize("lods", [
    ([[0, 1, 1, 4]], [[0, 0, 2, 3]]),      # an empty sequence in one input, then in the other
    ([[0, 0, 0]], [[0, 0, 0]]),            # no rows at all
    ([[0, 3]], [[0, 2]]),                  # one sequence
    ([[0, 2, 2, 5]], [[0, 1, 1, 1]]),      # a sequence empty in every input
])
def test_matches_the_reference(check, dtype, lods):
    rng = np.random.default_rng(1)
    xs = [Tensor((rng.standard_normal((lod[0][-1], 3)) * 10).astype(dtype), lod)
          for lod in lods]
    check("sequence_concat", {"X": xs})


def test_three_inputs_joined_in_input_order():
    xs = [Tensor(np.full((2, 1), float(i)), [[0, 1, 2]]) for i in range(3)]
    out = _concat(*xs)
    assert out.numpy().ravel().tolist() == [0, 1, 2, 0, 1, 2] and out.lod == [[0, 3, 6]]


def test_rows_of_different_dims_with_as_many_features():
    # Paddle compares features per row (product of the dims after the first): [n, 6] joins
    # [m, 2, 3], and Out takes the first input's row shape.
    a = Tensor(np.arange(12.0).reshape(2, 6), [[0, 1, 2]])
    b = Tensor(-np.arange(6.0).reshape(1, 2, 3), [[0, 1, 1]])
    out = _concat(a, b)
    assert out.shape == (3, 6) and out.lod == [[0, 2, 3]]
    np.testing.assert_array_equal(out.numpy()[1], -np.arange(6.0))


def test_gradient_of_every_input():
    rng = np.random.default_rng(2)
    xs = [Tensor(rng.standard_normal((4, 2)), [[0, 1, 1, 4]]),
          Tensor(rng.standard_normal((3, 2)), [[0, 2, 2, 3]]),
          Tensor(rng.standard_normal((2, 2)), [[0, 0, 1, 2]])]
    check_grad("sequence_concat", {"X": xs}, wrt=["X"])


def test_layer_and_gradients_through_a_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        a = layers.data("a", shape=[2], dtype="float64", lod_level=1)
        b = layers.data("b", shape=[2], dtype="float64", lod_level=1)
        a.stop_gradient = b.stop_gradient = False
        y = layers.sequence_concat([a, b])
        pooled = layers.sequence_pool(layers.tanh(y), "sum")
        loss = layers.mean(layers.elementwise_mul(pooled, pooled))
        hr.gradients(loss, [a, b])
    assert y.lod_level == 1 and list(y.shape) == [-1, 2]
    rng = np.random.default_rng(3)
    feed = {"a": create_lod_tensor(rng.standard_normal((3, 2)), [[1, 0, 2]]),
            "b": create_lod_tensor(rng.standard_normal((4, 2)), [[2, 1, 1]])}
    (got,) = hr.Executor().run(main, feed=feed, fetch_list=[y], scope=hr.Scope(),
                               return_numpy=False)
    assert got.lod == [[0, 3, 4, 7]]
    analytic, numeric = program_gradients(main, startup, loss, ["a", "b"], feed)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_errors():
    a = Tensor(np.zeros((3, 2)), [[0, 1, 3]])
    with pytest.raises(hr.HeadraceError, match="X\\[1\\] has 3 sequences, X\\[0\\] 2"):
        _concat(a, Tensor(np.zeros((3, 2)), [[0, 1, 2, 3]]))
    with pytest.raises(hr.HeadraceError, match="X\\[1\\] .* one LoD level"):
        _concat(a, Tensor(np.zeros((3, 2)), [[0, 1, 2], [0, 1, 2, 3]]))
    with pytest.raises(hr.HeadraceError, match="X\\[1\\] .*as many features per row"):
        _concat(a, Tensor(np.zeros((3, 3)), [[0, 1, 3]]))
    with pytest.raises(hr.HeadraceError, match="at least two sequence batches"):
        _concat(a)
    with pytest.raises(hr.HeadraceError, match="must have the dtype of X\\[0\\]"):
        _concat(a, Tensor(np.zeros((3, 2), np.float32), [[0, 1, 3]]))


def test_layer_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        a = layers.data("a", shape=[2], dtype="float32", lod_level=1)
        dense = layers.data("d", shape=[2], dtype="float32")
        with pytest.raises(hr.LayerError, match="list of two or more Variables"):
            layers.sequence_concat(a)
        with pytest.raises(hr.LayerError, match="list of two or more Variables"):
            layers.sequence_concat([a])
        with pytest.raises(hr.LayerError, match="input\\[1\\].*must have dtype"):
            layers.sequence_concat([a, layers.data("i", shape=[2], dtype="int32",
                                                   lod_level=1)])
        with pytest.raises(hr.HeadraceError, match="X\\[1\\] \\(d\\) must be a batch of sequ"):
            layers.sequence_concat([a, dense])


def test_kernel_checks_the_lod_against_the_rows(kernel):
    # The Executor refuses such a feed; the kernel, called directly, refuses it too.
    concat = kernel("sequence_concat")
    xs = [Tensor(np.zeros((3, 2)), [[0, 1, 3]]), Tensor(np.zeros((3, 2)), [[0, 1, 2]])]
    with pytest.raises(ValueError, match="X\\[1\\]'s LoD \\[0, 1, 2\\] does not describe its "
                                         "3 rows"):
        concat(xs)
