"""squeeze2 / unsqueeze2: Paddle's rules (a listed dim of another size stays; axes inserted in
turn), the shape rule with -1 dims and its errors, a run-time dim that breaks the declared
rank, and the gradients (through XShape) against finite differences."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients, run_op


def _run(op, x, **inputs_attrs):
    attrs = {"axes": inputs_attrs.pop("axes", [])}
    return run_op(op, dict(X=x, **inputs_attrs), attrs=attrs)["Out"][0].numpy()


@pytest.mark.parametrize("axes, shape", [
    ([], (3, 4)), ([0], (3, 1, 4, 1)), ([-1, 2], (1, 3, 4)), ([1], (1, 3, 1, 4, 1)),
])
def test_squeeze2(axes, shape):
    x = np.random.rand(1, 3, 1, 4, 1)
    out = _run("squeeze2", x, axes=axes)
    assert out.shape == shape
    np.testing.assert_array_equal(out.reshape(-1), x.reshape(-1))


@pytest.mark.parametrize("axes, shape", [
    ([0], (1, 3, 4)), ([-1], (3, 4, 1)), ([0, 2], (1, 3, 1, 4)),
    ([0, 3], (1, 3, 4, 1)),           # 3: the end of the rank-3 shape reached after the 1st
    ([-1, -1], (3, 4, 1, 1)), ([1, 1], (3, 1, 1, 4)),
])
def test_unsqueeze2_inserts_in_turn(axes, shape):
    x = np.random.rand(3, 4)
    for inputs in ({}, {"AxesTensor": np.array(axes, np.int32)},
                   {"AxesTensorList": [np.array([a], np.int64) for a in axes]}):
        out = _run("unsqueeze2", x, axes=[] if inputs else axes, **inputs)
        assert out.shape == shape
        np.testing.assert_array_equal(out.reshape(-1), x.reshape(-1))


def _program(op, shape, axes, **extra):
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=shape, dtype="float64", need_check_feed=True)
    out = g.create_var(name="out", dtype="float64")
    xs = g.create_var(name="xshape", dtype="float64")
    inputs = {"X": x}
    for slot, n in extra.items():
        inputs[slot] = g.create_var(name=slot, shape=[n], dtype="int64")
    g.append_op(op, inputs, {"Out": out, "XShape": xs}, {"axes": axes})
    return prog, out, xs


def test_shape_rules_with_unknown_dims():
    _, out, xs = _program("squeeze2", [-1, 1, 3], [])
    assert list(out.shape) == [-1, 3] and list(xs.shape) == [0, -1, 1, 3]
    _, out, _ = _program("squeeze2", [-1, 1, 3], [0, 2])  # -1 listed: taken to be 1
    assert list(out.shape) == [1, 3]
    _, out, _ = _program("unsqueeze2", [-1, 3], [0, -1])
    assert list(out.shape) == [1, -1, 3, 1]
    _, out, _ = _program("unsqueeze2", [-1, 3], [], AxesTensor=2)
    assert list(out.shape) == [-1, -1, -1, -1]


def test_shape_rule_errors_name_the_op_and_attribute():
    with pytest.raises(hr.HeadraceError, match=r"squeeze2.*attribute 'axes' names a dim"):
        _program("squeeze2", [2, 1], [2])
    with pytest.raises(hr.HeadraceError, match=r"unsqueeze2.*attribute 'axes' inserts at 4"):
        _program("unsqueeze2", [2, 1], [0, 4])
    with pytest.raises(hr.HeadraceError, match="length of input 'AxesTensor'.*is unknown"):
        _program("unsqueeze2", [2, 1], [], AxesTensor=-1)


def test_a_dim_assumed_1_at_build_time_must_be_1_at_run_time():
    prog, out, _ = _program("squeeze2", [-1, 3], [0])
    exe = hr.Executor()
    (got,) = exe.run(prog, feed={"x": np.ones((1, 3))}, fetch_list=[out], scope=hr.Scope())
    assert got.shape == (3,)
    with pytest.raises(hr.HeadraceError, match=r"squeeze2: axes \[0\] of X of shape \[2, 3\] "
                                               r"leave 2 dims, but the program declared Out "
                                               r"with 1"):
        exe.run(prog, feed={"x": np.ones((2, 3))}, fetch_list=[out], scope=hr.Scope())


def test_layers():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[1, 3], dtype="float64")
        s = layers.squeeze(x, axes=[1])
        u = layers.unsqueeze(s, axes=[-1, 0])
        t = layers.unsqueeze(x, axes=layers.assign(np.array([1], np.int64)))
    assert list(s.shape) == [-1, 3] and list(u.shape) == [1, -1, 3, 1]
    v = np.random.rand(2, 1, 3)
    got = hr.Executor().run(main, feed={"x": v}, fetch_list=[s, u, t], scope=hr.Scope())
    for g, want in zip(got, [v[:, 0], v[:, 0][None, :, :, None], v[:, None]]):
        np.testing.assert_array_equal(g, want)
    with pytest.raises(hr.HeadraceError, match="squeeze: argument 'axes' must be"):
        layers.squeeze(x, axes=[3])


@pytest.mark.parametrize("op, axes", [("squeeze2", [0, 2]), ("squeeze2", []),
                                      ("unsqueeze2", [1, -1])])
def test_gradient_matches_finite_differences(op, axes):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        p = layers.create_parameter([1, 3, 1, 2], "float64", name="P")
        g = main.global_block()
        out = g.create_var(name="out", dtype="float64")
        xs = g.create_var(name="xshape", dtype="float64")
        g.append_op(op, {"X": p}, {"Out": out, "XShape": xs}, {"axes": axes})
        w = layers.assign(np.random.rand(*out.shape))
        loss = layers.mean(layers.elementwise_mul(layers.sin(out), w))
        hr.append_backward(loss)
    assert op + "_grad" in [o.type for o in main.global_block().ops]
    analytic, numeric = program_gradients(main, startup, loss, ["P"], {})
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-6, atol=1e-8)
