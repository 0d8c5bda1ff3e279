"""The sequence-as-time-steps layers (Fluid's DynamicRNN building blocks) against NumPy."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.errors import LayerError
from headrace.runtime.tensor import create_lod_tensor

LENS = [2, 0, 3, 1]
X = np.arange(sum(LENS) * 2, dtype=np.float64).reshape(-1, 2)


def test_rank_table_steps_and_back():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[2], dtype="float64", lod_level=1)
        table = layers.lod_rank_table(x)
        longest = layers.max_sequence_len(table)
        steps = layers.lod_tensor_to_array(x, table)
        back = layers.array_to_lod_tensor(steps, table)
        i = layers.fill_constant([1], "int64", 1)
        mem = layers.shrink_memory(layers.reorder_lod_tensor_by_rank(
            layers.data("m", shape=[1], dtype="float64"), table), i, table)
        stacked, index = layers.tensor_array_to_tensor(steps, axis=0)
    m = np.array([[10.0], [11.0], [12.0], [13.0]])
    got = hr.Executor().run(main, feed={"x": create_lod_tensor(X, [LENS]), "m": m},
                            fetch_list=[longest, back, mem, stacked, index],
                            scope=hr.Scope(), return_numpy=False)
    n, b, shrunk, joined, sizes = got
    assert np.asarray(n).tolist() == [3]
    np.testing.assert_array_equal(np.asarray(b), X)
    assert b.lod == [[0, 2, 2, 5, 6]]
    # Rank order: sequence 2 (3 long), 0 (2), 3 (1), 1 (0); at step 1 two still run.
    np.testing.assert_array_equal(np.asarray(shrunk), [[12.0], [10.0]])
    offsets = np.cumsum([0] + LENS)
    order = [2, 0, 3]
    ref = [X[offsets[s] + t] for t in range(3) for s in order if LENS[s] > t]
    np.testing.assert_array_equal(np.asarray(joined), np.array(ref))
    assert np.asarray(sizes).tolist() == [3, 2, 1]


def test_wrong_kinds_are_clear_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[2], dtype="float64", lod_level=1)
        with pytest.raises(LayerError, match="max_sequence_len: argument 'rank_table' must be "
                                             "a lod_rank_table Variable"):
            layers.max_sequence_len(x)
        with pytest.raises(LayerError, match="tensor_array_to_tensor: argument 'input' must "
                                             "be a lod_tensor_array"):
            layers.tensor_array_to_tensor(x)
