"""gather and gather_nd: NumPy semantics through the layers and the Executor, shape rules with
unknown dims, index errors that name the op, the Index variable and the bad value, and the
gradients (scatter-adds into zeros) against finite differences in float64."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import check_grad, program_gradients


def _run(build, feed):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        outs = build()
    exe = hr.Executor()
    scope = hr.Scope()
    exe.run(startup, scope=scope)
    return outs, exe.run(main, feed=feed, fetch_list=list(outs), scope=scope)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("index_shape", [[4], [4, 1], []])
def test_gather_is_numpy_take(axis, index_shape):
    x = np.random.rand(3, 5, 2)
    idx = np.asarray(np.random.randint(0, x.shape[axis], size=index_shape), "int64")

    def build():
        xv = layers.data("x", [3, 5, 2], dtype="float64", append_batch_size=False)
        iv = layers.data("i", index_shape, dtype="int64", append_batch_size=False)
        return [layers.gather(xv, iv, axis=axis)]

    (out,), (got,) = _run(build, {"x": x, "i": np.asarray(idx)})
    expected = np.take(x, idx.reshape(-1) if idx.ndim else idx, axis=axis)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_gather_axis_from_a_tensor():
    x = np.random.rand(3, 4)

    def build():
        xv = layers.data("x", [3, 4], dtype="float64", append_batch_size=False)
        iv = layers.data("i", [2], dtype="int32", append_batch_size=False)
        av = layers.data("a", [1], dtype="int64", append_batch_size=False)
        return [layers.gather(xv, iv, axis=av)]

    (out,), (got,) = _run(build, {"x": x, "i": np.array([3, 0], "int32"),
                                  "a": np.array([1])})
    assert tuple(out.shape) == (-1, -1)
    np.testing.assert_array_equal(got, x[:, [3, 0]])


def test_shape_rules_with_unknown_dims():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", [-1, 7, 3], dtype="float32", append_batch_size=False)
        i = layers.data("i", [-1], dtype="int64", append_batch_size=False)
        assert tuple(layers.gather(x, i, axis=1).shape) == (-1, -1, 3)
        assert tuple(layers.gather(x, i).shape) == (-1, 7, 3)
        nd = layers.data("nd", [-1, 5, 2], dtype="int64", append_batch_size=False)
        assert tuple(layers.gather_nd(x, nd).shape) == (-1, 5, 3)


def test_shape_rule_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", [4, 3], dtype="float32", append_batch_size=False)
        i2 = layers.data("i2", [2, 2], dtype="int64", append_batch_size=False)
        with pytest.raises(hr.HeadraceError, match="'Index' .*must be 1-D, \\[N, 1\\] or 0-D"):
            layers.gather(x, i2)
        with pytest.raises(hr.HeadraceError, match="axis"):
            layers.gather(x, layers.data("i", [2], dtype="int64", append_batch_size=False),
                          axis=2)
        deep = layers.data("deep", [5, 3], dtype="int64", append_batch_size=False)
        with pytest.raises(hr.HeadraceError, match="last dim of Index"):
            layers.gather_nd(x, deep)
        with pytest.raises(hr.LayerError, match="gather: argument 'index'.*int32 or int64"):
            layers.gather(x, x)


def _error_of(build, feed):
    with pytest.raises(hr.HeadraceError) as info:
        _run(build, feed)
    return str(info.value)


@pytest.mark.parametrize("bad", [5, -1])
def test_gather_index_out_of_range_names_op_variable_and_value(bad):
    def build():
        xv = layers.data("x", [5, 2], dtype="float64", append_batch_size=False)
        iv = layers.data("ids", [3], dtype="int64", append_batch_size=False)
        return [layers.gather(xv, iv)]

    msg = _error_of(build, {"x": np.zeros((5, 2)), "ids": np.array([0, bad, 1])})
    assert "gather" in msg and "Index (ids)" in msg and f"holds {bad} at [1]" in msg
    assert "valid: 0..4" in msg


def test_gather_nd_is_numpy_indexing():
    x = np.random.rand(3, 4, 2)
    idx = np.array([[[0, 1], [2, 3]], [[1, 0], [0, 0]]], "int64")  # [2, 2, 2]

    def build():
        xv = layers.data("x", [3, 4, 2], dtype="float64", append_batch_size=False)
        iv = layers.data("i", [2, 2, 2], dtype="int64", append_batch_size=False)
        return [layers.gather_nd(xv, iv)]

    (out,), (got,) = _run(build, {"x": x, "i": idx})
    assert tuple(out.shape) == (2, 2, 2)
    np.testing.assert_array_equal(got, x[idx[..., 0], idx[..., 1]])


def test_gather_nd_index_out_of_range_names_the_dim():
    def build():
        xv = layers.data("x", [3, 4], dtype="float64", append_batch_size=False)
        iv = layers.data("pos", [2, 2], dtype="int32", append_batch_size=False)
        return [layers.gather_nd(xv, iv)]

    msg = _error_of(build, {"x": np.zeros((3, 4)), "pos": np.array([[0, 1], [2, 4]], "int32")})
    assert "gather_nd" in msg and "Index (pos)" in msg and "holds 4 at [1, 1]" in msg
    assert "dim 1 of X of size 4" in msg


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_gradient_accumulates_repeated_indices(axis):
    x = np.random.rand(4, 3, 2)
    idx = np.array([1, 0, 1, 1], "int64") % x.shape[axis]
    check_grad("gather", {"X": x, "Index": idx}, wrt=["X"], attrs={"axis": axis})


def test_gather_gradient_of_a_0d_index():
    check_grad("gather", {"X": np.random.rand(4, 3), "Index": np.array(2, "int32")},
               wrt=["X"], attrs={"axis": 1})


def test_gather_nd_gradient():
    x = np.random.rand(3, 4, 2)
    idx = np.array([[0, 1], [2, 3], [0, 1]], "int64")  # a repeated entry
    check_grad("gather_nd", {"X": x, "Index": idx}, wrt=["X"])


def test_gradients_through_a_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        p = layers.create_parameter([5, 3], "float64", name="P")
        i = layers.data("i", [4], dtype="int64", append_batch_size=False)
        nd = layers.data("nd", [2, 2], dtype="int64", append_batch_size=False)
        rows = layers.gather(p, i)
        picks = layers.gather_nd(p, nd)
        loss = layers.elementwise_add(layers.mean(layers.elementwise_mul(rows, rows)),
                                      layers.mean(layers.elementwise_mul(picks, picks)))
        hr.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    assert "gather_grad" in types and "gather_nd_grad" in types
    feed = {"i": np.array([4, 0, 4, 2]), "nd": np.array([[1, 2], [4, 0]])}
    analytic, numeric = program_gradients(main, startup, loss, ["P"], feed)
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-6, atol=1e-8)
    assert np.all(analytic["P"][3] == 0)  # row 3 is never picked


@pytest.mark.parametrize("dtype", ["int64", "bool", "float16"])
def test_any_element_type(dtype):
    x = (np.arange(12).reshape(4, 3) % 3).astype(dtype)
    idx = np.array([[3, 0], [1, 1]], "int64")

    def build():
        xv = layers.data("x", [4, 3], dtype=dtype, append_batch_size=False)
        i = layers.data("i", [2], dtype="int32", append_batch_size=False)
        nd = layers.data("nd", [2, 2], dtype="int64", append_batch_size=False)
        return [layers.gather(xv, i, axis=1), layers.gather_nd(xv, nd)]

    _, (rows, picks) = _run(build, {"x": x, "i": np.array([2, 0], "int32"), "nd": idx})
    assert rows.dtype == dtype and picks.dtype == dtype
    np.testing.assert_array_equal(rows, x[:, [2, 0]])
    np.testing.assert_array_equal(picks, x[idx[:, 0], idx[:, 1]])
