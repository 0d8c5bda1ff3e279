"""sequence_enumerate: Paddle's documented example, windows against a direct construction for
windows longer and shorter than the sequences, int32 and int64 ids, LoD edge cases (an empty
sequence, one sequence, no rows; two LoD levels only where the first still counts rows, as
Paddle reads it), no gradient, and errors: ids not [rows, 1], float ids, win_size below 2, a
first LoD level that does not count X's rows."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.ops import default_registry
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import run_op


def _enumerate(x, win_size, pad_value=0):
    (out,) = run_op("sequence_enumerate", {"X": x},
                    attrs={"win_size": win_size, "pad_value": pad_value})["Out"]
    return out


def _windows(ids, lengths, win, pad):
    out, start = [], 0
    for n in lengths:
        seq = list(ids[start:start + n])
        out += [(seq[r:r + win] + [pad] * win)[:win] for r in range(n)]
        start += n
    return np.array(out, dtype=np.int64).reshape(-1, win)


def test_paddles_documented_example():
    # sequence_enumerate_op.cc: lod [[0, 3, 5]], ids 1..5, win_size 2, pad_value 0.
    out = _enumerate(Tensor(np.arange(1, 6, dtype=np.int64)[:, None], [[0, 3, 5]]), 2)
    assert out.numpy().tolist() == [[1, 2], [2, 3], [3, 0], [4, 5], [5, 0]]
    assert out.lod == [[0, 3, 5]] and out.dtype == "int64"


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("lengths, win", [
    ([3, 0, 1, 4], 2),     # an empty sequence, a sequence of one id
    ([2, 5], 4),           # a window longer than a sequence
    ([6], 3),              # one sequence
    ([0, 0], 2),           # no rows
])
def test_windows(check, dtype, lengths, win):
    ids = np.random.default_rng(0).integers(1, 99, sum(lengths)).astype(dtype)
    lod = [np.cumsum([0] + lengths).tolist()]
    out = _enumerate(Tensor(ids[:, None], lod), win, pad_value=-7)
    np.testing.assert_array_equal(out.numpy(), _windows(ids, lengths, win, -7))
    assert out.dtype == dtype and out.lod == lod
    check("sequence_enumerate", {"X": Tensor(ids[:, None], lod)},
          {"win_size": win, "pad_value": -7})


def test_two_lod_levels_read_the_first_as_paddle_does():
    # The first level counts rows only when every sub-sequence has one row; X's LoD is kept.
    x = Tensor(np.array([[1], [2], [3]]), [[0, 2, 3], [0, 1, 2, 3]])
    out = _enumerate(x, 2)
    assert out.numpy().tolist() == [[1, 2], [2, 0], [3, 0]] and out.lod == x.lod
    with pytest.raises(hr.HeadraceError, match="first LoD level \\[0, 1, 2\\] does not "
                                               "describe its 3 rows"):
        _enumerate(Tensor(np.array([[1], [2], [3]]), [[0, 1, 2], [0, 1, 3]]), 2)


def test_has_no_gradient():
    opdef = default_registry().get("sequence_enumerate")
    assert not opdef.differentiable and opdef.grad is None


def test_layer():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[1], dtype="int64", lod_level=1)
        y = layers.sequence_enumerate(x, win_size=3, pad_value=9)
    assert y.stop_gradient and list(y.shape) == [-1, 3] and y.lod_level == 1
    feed = {"x": create_lod_tensor(np.array([[4], [5], [6]]), [[1, 2]])}
    (got,) = hr.Executor().run(main, feed=feed, fetch_list=[y], scope=hr.Scope(),
                               return_numpy=False)
    assert got.numpy().tolist() == [[4, 9, 9], [5, 6, 9], [6, 9, 9]] and got.lod == [[0, 1, 3]]


def test_errors():
    with pytest.raises(hr.HeadraceError, match="X \\(x_0\\) must be an id sequence batch "
                                               "\\[rows, 1\\]"):
        _enumerate(Tensor(np.zeros((3, 2), np.int64), [[0, 3]]), 2)
    with pytest.raises(hr.HeadraceError, match="input 'X' .* unsupported dtype"):
        _enumerate(Tensor(np.zeros((3, 1)), [[0, 3]]), 2)
    with pytest.raises(hr.HeadraceError, match="attribute 'win_size' must be >= 2"):
        _enumerate(Tensor(np.zeros((3, 1), np.int64), [[0, 3]]), 1)


def test_layer_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[1], dtype="int64", lod_level=1)
        with pytest.raises(hr.LayerError, match="'win_size' must be >= 2"):
            layers.sequence_enumerate(x, 1)
        with pytest.raises(hr.LayerError, match="'pad_value' must be an int"):
            layers.sequence_enumerate(x, 2, pad_value=0.5)
        with pytest.raises(hr.LayerError, match="'input' .*must have dtype int32 or int64"):
            layers.sequence_enumerate(layers.data("f", shape=[1], dtype="float32",
                                                  lod_level=1), 2)
