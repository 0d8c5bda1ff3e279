"""select_input / select_output: routing by the mask, candidates without values, errors, and
the gradients ("select_input"'s is "select_output" and back) against finite differences."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.errors import OpError
from headrace.testing import program_gradients


def _run(prog, feed, fetch):
    return hr.Executor().run(prog, feed=feed, fetch_list=fetch, scope=hr.Scope())


def _select_program():
    prog = hr.Program()
    g = prog.global_block()
    a = g.create_var(name="a", shape=[2, 3], dtype="float64", need_check_feed=True)
    b = g.create_var(name="b", shape=[2, 3], dtype="float64", need_check_feed=True)
    m = g.create_var(name="m", shape=[1], dtype="int32", need_check_feed=True)
    out = g.append_op("select_input", {"X": [a, b], "Mask": m}, {"Out": "out"}).output("Out")
    return prog, out[0]


@pytest.mark.parametrize("mask", [0, 1])
def test_select_input_picks_the_masked_candidate(mask):
    prog, out = _select_program()
    a, b = np.random.rand(2, 3), np.random.rand(2, 3)
    (got,) = _run(prog, {"a": a, "b": b, "m": np.array([mask], np.int32)}, [out])
    np.testing.assert_array_equal(got, [a, b][mask])


def test_select_input_bad_mask_names_the_op():
    prog, out = _select_program()
    with pytest.raises(OpError, match=r"select_input.*Mask must pick one of the 2 candidates"):
        _run(prog, {"a": np.zeros((2, 3)), "b": np.zeros((2, 3)),
                    "m": np.array([2], np.int32)}, [out])


def test_select_input_needs_one_dtype():
    prog = hr.Program()
    g = prog.global_block()
    a = g.create_var(name="a", shape=[2], dtype="float64")
    b = g.create_var(name="b", shape=[2], dtype="float32")
    m = g.create_var(name="m", shape=[1], dtype="int32")
    with pytest.raises(hr.HeadraceError, match="must share one dtype"):
        g.append_op("select_input", {"X": [a, b], "Mask": m}, {"Out": "out"})


def test_select_output_writes_only_the_masked_output():
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=[3], dtype="float64", need_check_feed=True)
    m = g.create_var(name="m", shape=[1], dtype="int32", need_check_feed=True)
    outs = [g.create_var(name=f"o{k}", shape=[3], dtype="float64") for k in range(3)]
    g.append_op("select_output", {"X": x, "Mask": m}, {"Out": outs})
    xv = np.array([1.0, 2.0, 3.0])
    (got,) = _run(prog, {"x": xv, "m": np.array([2], np.int32)}, ["o2"])
    np.testing.assert_array_equal(got, xv)
    with pytest.raises(hr.HeadraceError, match="o0"):  # never written: no value to fetch
        _run(prog, {"x": xv, "m": np.array([2], np.int32)}, ["o0"])


@pytest.mark.parametrize("flag", [True, False])
def test_cond_gradients_through_select_input(flag):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        c = layers.data("c", shape=[1], dtype="bool", append_batch_size=False)
        w = layers.create_parameter([3, 2], "float64", name="W")
        v = layers.create_parameter([3, 2], "float64", name="V")
        out = layers.cond(c, lambda: layers.tanh(layers.matmul(x, w)),
                          lambda: layers.sigmoid(layers.matmul(x, v)))
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    assert "select_input" in types and "select_output" in types  # the grad is select_output
    feed = {"x": np.random.RandomState(0).randn(4, 3), "c": np.array([flag])}
    analytic, numeric = program_gradients(main, startup, loss, ["W", "V"], feed)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)
    assert analytic["W"].any() == flag and analytic["V"].any() == (not flag)


def test_select_output_gradient_is_select_input():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.create_parameter([3], "float64", name="X")
        g = main.global_block()
        m = layers.fill_constant([1], "int32", 1)
        outs = [g.create_var(name=f"o{k}", shape=[3], dtype="float64") for k in range(2)]
        g.append_op("select_output", {"X": x, "Mask": m}, {"Out": outs})
        loss = layers.mean(layers.elementwise_mul(outs[1], outs[1]))
        hr.append_backward(loss)
    assert "select_input" in [op.type for op in main.global_block().ops]
    analytic, numeric = program_gradients(main, startup, loss, ["X"], {})
    np.testing.assert_allclose(analytic["X"], numeric["X"], rtol=1e-6, atol=1e-8)
