"""Initializers and ParamAttr: the startup ops they append, their attributes and seeds, and the
values the startup program produces."""
import math

import numpy as np
import pytest

import headrace as hr
from headrace import LayerError
from headrace.initializer import (MSRA, Constant, Normal, NumpyArrayInitializer, Uniform, Xavier,
                                  compute_fans)

I = hr.initializer


# `progs` is a fixture of conftest.py.


def param(shape, init, dtype="float32", name=None):
    """A parameter created through the layer machinery with ``init``."""
    return hr.layers.create_parameter(shape, dtype, attr=hr.ParamAttr(name=name,
                                                                      initializer=init))


def init_op(startup, name):
    (op,) = [op for op in startup.global_block().ops if op.output("Out") == [name]]
    return op


def startup_values(startup, names):
    scope = hr.Scope()
    exe = hr.Executor()
    exe.run(startup, scope=scope)
    # fetch through a program that only reads the persistables
    prog = hr.Program()
    for n in names:
        v = startup.global_block().var(n)
        prog.global_block().create_var(name=n, shape=v.shape, dtype=v.dtype, persistable=True)
    return exe.run(prog, fetch_list=list(names), scope=scope)


def test_constant(progs):
    main, startup = progs
    p = param([2, 3], Constant(1.5))
    q = param([4], Constant(7, force_cpu=True), dtype="int64")
    op = init_op(startup, p.name)
    assert op.type == "fill_constant" and op.attr("shape") == [2, 3]
    assert op.attr("value") == 1.5 and op.attr("dtype") == 5 and not op.attr("force_cpu")
    assert init_op(startup, q.name).attr("force_cpu") and init_op(startup, q.name).attr(
        "dtype") == 3
    assert not main.global_block().ops  # initializers never touch the main program
    pv, qv = startup_values(startup, [p.name, q.name])
    np.testing.assert_array_equal(pv, np.full((2, 3), 1.5, np.float32))
    np.testing.assert_array_equal(qv, np.full(4, 7))
    assert qv.dtype == np.int64


def test_uniform_and_normal_attrs_and_values(progs):
    _, startup = progs
    u = param([2000], Uniform(-0.5, 0.25, seed=11))
    n = param([4000], Normal(1.0, 2.0, seed=12), dtype="float64")
    uop, nop = init_op(startup, u.name), init_op(startup, n.name)
    assert uop.type == "uniform_random" and (uop.attr("min"), uop.attr("max")) == (-0.5, 0.25)
    assert uop.attr("seed") == 11 and uop.attr("shape") == [2000] and uop.attr("dtype") == 5
    assert nop.type == "gaussian_random" and (nop.attr("mean"), nop.attr("std")) == (1.0, 2.0)
    assert nop.attr("seed") == 12 and nop.attr("dtype") == 6
    uv, nv = startup_values(startup, [u.name, n.name])
    assert uv.min() >= -0.5 and uv.max() < 0.25 and abs(uv.mean() + 0.125) < 0.02
    assert nv.dtype == np.float64 and abs(nv.mean() - 1.0) < 0.15 and abs(nv.std() - 2.0) < 0.15


@pytest.mark.parametrize("shape, fans", [
    ([7], (7, 7)), ([3, 5], (3, 5)), ([8, 4, 3, 3], (36, 72)), ([], (1, 1)),
])
def test_compute_fans(shape, fans):
    assert compute_fans(shape) == fans


def test_xavier_and_msra(progs):
    _, startup = progs
    a = param([30, 20], Xavier())
    b = param([30, 20], Xavier(uniform=False, seed=3))
    c = param([16, 4, 3, 3], Xavier(fan_in=10, fan_out=14))
    d = param([16, 4, 3, 3], MSRA())
    e = param([30, 20], MSRA(uniform=False, fan_in=50))
    ops = [init_op(startup, p.name) for p in (a, b, c, d, e)]
    assert [op.type for op in ops] == ["uniform_random", "gaussian_random", "uniform_random",
                                       "uniform_random", "gaussian_random"]
    assert ops[0].attr("max") == pytest.approx(math.sqrt(6 / 50)) == -ops[0].attr("min")
    assert ops[1].attr("std") == pytest.approx(math.sqrt(2 / 50)) and ops[1].attr("seed") == 3
    assert ops[1].attr("mean") == 0.0
    assert ops[2].attr("max") == pytest.approx(math.sqrt(6 / 24))
    assert ops[3].attr("max") == pytest.approx(math.sqrt(6 / 36))
    assert ops[4].attr("std") == pytest.approx(math.sqrt(2 / 50))
    (av,) = startup_values(startup, [a.name])
    limit = math.sqrt(6 / 50)
    assert av.shape == (30, 20) and -limit <= av.min() and av.max() < limit


def test_numpy_array_initializer(progs):
    _, startup = progs
    f = np.arange(6, dtype=np.float64).reshape(2, 3) / 4
    p = param([2, 3], NumpyArrayInitializer(f))
    q = param([3], NumpyArrayInitializer(np.array([1, -2, 3])), dtype="int64")
    r = param([2], NumpyArrayInitializer(np.array([0.5, 1.5])), dtype="float64")
    pop, qop, rop = (init_op(startup, v.name) for v in (p, q, r))
    assert pop.type == "assign_value" and pop.attr("shape") == [2, 3]
    assert pop.attr("fp32_values") == pytest.approx(f.ravel().tolist())
    assert qop.attr("int64_values") == [1, -2, 3] and qop.attr("dtype") == 3
    assert rop.attr("fp64_values") == [0.5, 1.5]
    pv, qv, rv = startup_values(startup, [p.name, q.name, r.name])
    np.testing.assert_array_equal(pv, f.astype(np.float32))
    np.testing.assert_array_equal(qv, [1, -2, 3])
    np.testing.assert_array_equal(rv, [0.5, 1.5])


def test_initializer_declares_the_twin_in_the_startup_program(progs):
    main, startup = progs
    block = main.global_block()
    p = block.create_parameter("w", [2, 2], "float32", trainable=False,
                               optimize_attr={"learning_rate": 0.5})
    v = block.create_var(name="state", shape=[3], dtype="int32", persistable=True)
    op = Constant(2.0)(p)              # default: the default startup program
    Constant(1)(v, startup.global_block())
    twin = startup.global_block().var("w")
    assert isinstance(twin, hr.Parameter) and twin is not p and twin.shape == (2, 2)
    assert not twin.trainable and twin.optimize_attr == {"learning_rate": 0.5}
    assert op.block is startup.global_block() and op.output("Out") == ["w"]
    sv = startup.global_block().var("state")
    assert sv.persistable and sv.dtype == "int32" and sv.shape == (3,)
    assert not block.ops
    # a variable of the startup program itself is used as it is
    Constant(3.0)(twin, startup.global_block())
    assert len([o for o in startup.global_block().ops if o.output("Out") == ["w"]]) == 2


def test_seed_zero_follows_the_startup_programs_random_seed():
    def build(seed):
        main, startup = hr.Program(), hr.Program()
        startup.random_seed = seed
        with hr.program_guard(main, startup), hr.unique_name.guard():
            a = param([50], Uniform())
            b = param([50], Normal())
            c = param([50], Uniform())
        # The program's seed is written into each op (issue 12 item 5), one derived per op.
        seeds = [init_op(startup, p.name).attr("seed") for p in (a, b, c)]
        assert all(seeds) and len(set(seeds)) == 3
        return startup_values(startup, [a.name, b.name, c.name])

    a1, b1, c1 = build(42)
    a2, b2, c2 = build(42)
    a3, _, _ = build(43)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    assert not np.array_equal(a1, c1)  # same shape and initializer, different parameters
    assert not np.array_equal(a1, a3)


def test_explicit_seed_is_reproducible():
    def build():
        main, startup = hr.Program(), hr.Program()
        with hr.program_guard(main, startup), hr.unique_name.guard():
            p = param([20], Xavier(seed=5))
        return startup_values(startup, [p.name])[0]
    np.testing.assert_array_equal(build(), build())


@pytest.mark.parametrize("make, message", [
    (lambda: Uniform(1.0, -1.0), "Uniform: argument 'low' \\(1.0\\) must not exceed 'high'"),
    (lambda: Normal(0.0, -1.0), "Normal: argument 'scale' must be >= 0.0"),
    (lambda: Uniform(seed=-1), "Uniform: argument 'seed' must be an int in"),
    (lambda: Xavier(seed=1.5), "Xavier: argument 'seed'"),
    (lambda: Xavier(fan_in=0), "Xavier: argument 'fan_in' must be > 0"),
    (lambda: MSRA(fan_in=-3), "MSRA: argument 'fan_in' must be > 0"),
    (lambda: Constant("1"), "Constant: argument 'value' must be a finite number"),
    (lambda: Constant(float("nan")), "Constant: argument 'value' must be a finite number"),
    (lambda: NumpyArrayInitializer([1, 2]), "NumpyArrayInitializer: argument 'value' must be"),
])
def test_initializer_argument_errors(make, message):
    with pytest.raises(LayerError, match=message):
        make()


def test_initializer_target_errors(progs):
    main, _ = progs
    v = main.global_block().create_var(name="v", shape=[-1, 3], dtype="float32")
    with pytest.raises(LayerError, match="Constant: variable 'v' needs a fully known shape"):
        Constant(1.0)(v)
    with pytest.raises(LayerError, match="Uniform: expected the Variable to initialize"):
        Uniform()("v")
    with pytest.raises(LayerError, match="shape \\[3\\] differs from variable 'w'"):
        param([2], NumpyArrayInitializer(np.zeros(3)), name="w")
    with pytest.raises(LayerError, match="has dtype uint8; supported"):
        NumpyArrayInitializer(np.zeros(2))(
            main.global_block().create_var(name="u", shape=[2], dtype="uint8"))


def test_fluid_long_names():
    assert I.XavierInitializer is Xavier and I.ConstantInitializer is Constant
    assert I.UniformInitializer is Uniform and I.NormalInitializer is Normal
    assert I.MSRAInitializer is MSRA


# -- ParamAttr -----------------------------------------------------------------------------------

def test_param_attr_conversions():
    to = hr.ParamAttr._to_attr
    assert isinstance(to(None), hr.ParamAttr) and to(None).name is None
    assert to("w").name == "w"
    assert to(False) is False and isinstance(to(True), hr.ParamAttr)
    init = Constant(2.0)
    assert to(init).initializer is init
    reg = hr.regularizer.L1Decay(0.1)
    assert to(reg).regularizer is reg
    attr = hr.ParamAttr(name="x")
    assert to(attr) is attr and [a.name for a in to(["a", attr])] == ["a", "x"]
    kw = hr.ParamAttr(learning_rate=0.1, trainable=False)._to_kwargs()
    assert kw["optimize_attr"] == {"learning_rate": 0.1} and kw["trainable"] is False


@pytest.mark.parametrize("kwargs, message", [
    ({"name": ""}, "ParamAttr: argument 'name'"),
    ({"initializer": "xavier"}, "ParamAttr: argument 'initializer'"),
    ({"learning_rate": -1}, "ParamAttr: argument 'learning_rate'"),
    ({"regularizer": 0.1}, "ParamAttr: argument 'regularizer'"),
    ({"gradient_clip": 1.0}, "ParamAttr: argument 'gradient_clip'"),
])
def test_param_attr_errors(kwargs, message):
    with pytest.raises(LayerError, match=message):
        hr.ParamAttr(**kwargs)


def test_layer_default_initializers(progs):
    _, startup = progs
    x = hr.layers.data("x", [6])
    out = hr.layers.fc(x, 4, param_attr=I.Normal(0.0, 0.01), bias_attr=I.Constant(0.1))
    w_op, b_op = init_op(startup, out.param.name), init_op(startup, out.bias.name)
    assert w_op.type == "gaussian_random" and w_op.attr("std") == pytest.approx(0.01)
    assert b_op.type == "fill_constant" and b_op.attr("value") == pytest.approx(0.1)
    assert out.param.initializer.__class__ is Normal
