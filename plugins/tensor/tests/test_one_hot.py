"""one_hot_v2: one-hot rows, depth from an attribute or a tensor, the output dtype, ids out of
range (an error naming the op, the variable and the id, or zero rows when allowed)."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers


def _run(ids, depth, feed_depth=False, **kw):
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        iv = layers.data("ids", list(ids.shape), dtype=ids.dtype.name, append_batch_size=False)
        d = layers.data("depth", [1], dtype="int32", append_batch_size=False) \
            if feed_depth else depth
        out = layers.one_hot(iv, d, **kw)
    feed = {"ids": ids}
    if feed_depth:
        feed["depth"] = np.array([depth], "int32")
    (got,) = hr.Executor().run(main, feed=feed, fetch_list=[out], scope=hr.Scope())
    return out, got


@pytest.mark.parametrize("feed_depth", [False, True])
def test_rows_like_numpy_eye(feed_depth):
    ids = np.array([[0, 3], [2, 2], [1, 0]], "int64")
    out, got = _run(ids, 4, feed_depth)
    assert tuple(out.shape) == (3, 2, -1 if feed_depth else 4)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.eye(4, dtype="float32")[ids])


def test_dtype_and_allowed_out_of_range_ids():
    ids = np.array([0, 5, -1, 2], "int32")
    _, got = _run(ids, 3, allow_out_of_range=True, dtype="int64")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [[1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1]])


def test_out_of_range_id_names_op_variable_and_value():
    with pytest.raises(hr.HeadraceError) as info:
        _run(np.array([1, 3], "int64"), 3)
    msg = str(info.value)
    assert "one_hot_v2" in msg and "X (ids)" in msg and "holds 3 at [1]" in msg
    assert "valid: 0..2" in msg


def test_errors_at_build_time():
    with hr.program_guard(hr.Program(), hr.Program()):
        ids = layers.data("ids", [-1], dtype="int64", append_batch_size=False)
        assert tuple(layers.one_hot(ids, 7).shape) == (-1, 7)
        with pytest.raises(hr.LayerError, match="one_hot: argument 'depth' must be >= 1"):
            layers.one_hot(ids, 0)
        x = layers.data("x", [3], dtype="float32", append_batch_size=False)
        with pytest.raises(hr.LayerError, match="one_hot: argument 'input'.*int32 or int64"):
            layers.one_hot(x, 3)
