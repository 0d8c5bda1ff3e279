"""scatter: overwrite and accumulate modes against NumPy, shape rules, index errors that name
the op, the Ids variable and the bad id, and the gradients against finite differences."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import check_grad, program_gradients


def _scatter(x, ids, upd, overwrite):
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        xv = layers.data("x", list(x.shape), dtype="float64", append_batch_size=False)
        iv = layers.data("ids", list(ids.shape), dtype=ids.dtype.name, append_batch_size=False)
        uv = layers.data("u", list(upd.shape), dtype="float64", append_batch_size=False)
        out = layers.scatter(xv, iv, uv, overwrite=overwrite)
    assert tuple(out.shape) == x.shape
    (got,) = hr.Executor().run(main, feed={"x": x, "ids": ids, "u": upd}, fetch_list=[out],
                               scope=hr.Scope())
    return got


def test_overwrite_keeps_the_last_update_of_a_repeated_id():
    x = np.random.rand(4, 2)
    upd = np.random.rand(3, 2)
    got = _scatter(x, np.array([2, 0, 2]), upd, True)
    expected = x.copy()
    expected[0], expected[2] = upd[1], upd[2]
    np.testing.assert_array_equal(got, expected)


def test_accumulate_replaces_the_rows_by_the_sum_of_their_updates():
    x = np.random.rand(4, 2)
    upd = np.random.rand(3, 2)
    got = _scatter(x, np.array([[2], [0], [2]], "int32"), upd, False)
    expected = x.copy()
    expected[0], expected[2] = upd[1], upd[0] + upd[2]
    np.testing.assert_allclose(got, expected)


def test_shape_rule_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", [-1, 3], dtype="float32", append_batch_size=False)
        ids = layers.data("ids", [-1], dtype="int64", append_batch_size=False)
        assert tuple(layers.scatter(x, ids, layers.data(
            "u", [-1, 3], dtype="float32", append_batch_size=False)).shape) == (-1, 3)
        bad = layers.data("bad", [2, 4], dtype="float32", append_batch_size=False)
        with pytest.raises(hr.HeadraceError, match="'Updates' \\(bad\\) must hold one row"):
            layers.scatter(x, ids, bad)


@pytest.mark.parametrize("bad", [4, -2])
def test_id_out_of_range_names_op_variable_and_value(bad):
    with pytest.raises(hr.HeadraceError) as info:
        _scatter(np.zeros((4, 2)), np.array([1, bad]), np.zeros((2, 2)), True)
    msg = str(info.value)
    assert "scatter" in msg and "Ids (ids)" in msg and f"holds {bad} at [1]" in msg
    assert "valid: 0..3" in msg


@pytest.mark.parametrize("overwrite", [True, False])
def test_gradients_against_finite_differences(overwrite):
    x, upd = np.random.rand(5, 3), np.random.rand(4, 3)
    # id 3 repeats: with overwrite the first of its updates never reaches Out (its gradient
    # is zero), accumulating it does.
    check_grad("scatter", {"X": x, "Ids": np.array([3, 0, 3, 1]), "Updates": upd},
               wrt=["X", "Updates"], attrs={"overwrite": overwrite})


def test_gradients_through_a_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        p = layers.create_parameter([4, 2], "float64", name="P")
        u = layers.create_parameter([3, 2], "float64", name="U")
        ids = layers.data("ids", [3], dtype="int64", append_batch_size=False)
        out = layers.scatter(p, ids, u, overwrite=True)
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    assert "scatter_grad" in [op.type for op in main.global_block().ops]
    analytic, numeric = program_gradients(main, startup, loss, ["P", "U"],
                                          {"ids": np.array([2, 0, 2])})
    for n in ("P", "U"):
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)
    assert np.all(analytic["P"][[0, 2]] == 0) and np.all(analytic["U"][0] == 0)
