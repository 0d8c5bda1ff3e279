"""Math, tensor and control-flow layers: ops, shapes, attributes, forward values, errors."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import op_types, run_programs
from headrace import LayerError

L = hr.layers


# `progs` is a fixture of conftest.py.
types, run = op_types, run_programs


# -- math layers -------------------------------------------------------------------------------

@pytest.mark.parametrize("layer, ref", [
    (L.elementwise_add, np.add), (L.elementwise_sub, np.subtract),
    (L.elementwise_mul, np.multiply), (L.elementwise_div, np.divide),
    (L.elementwise_max, np.maximum), (L.elementwise_min, np.minimum),
    (L.elementwise_pow, np.power),
])
def test_elementwise_layers(progs, layer, ref):
    main, startup = progs
    x, y = L.data("x", [2, 3]), L.data("y", [2], append_batch_size=False)
    out = layer(x, y, axis=1)
    (op,) = main.global_block().ops
    assert op.type == layer.__name__ and op.attr("axis") == 1 and out.shape == (-1, 2, 3)
    xv = np.random.RandomState(6).rand(2, 2, 3).astype("float32") + 0.5
    yv = np.array([1.5, 2.0], np.float32)
    (got,) = run(main, startup, {"x": xv, "y": yv}, [out])
    np.testing.assert_allclose(got, ref(xv, yv.reshape(1, 2, 1)), rtol=1e-5)


def test_elementwise_with_act(progs):
    main, _ = progs
    x = L.data("x", [3])
    L.elementwise_add(x, x, act="sigmoid")
    assert types(main) == ["elementwise_add", "sigmoid"]


ACTIVATIONS = [
    (L.relu, {}, lambda x: np.maximum(x, 0)),
    (L.sigmoid, {}, lambda x: 1 / (1 + np.exp(-x))),
    (L.tanh, {}, np.tanh),
    (L.exp, {}, np.exp),
    (L.square, {}, np.square),
    (L.abs, {}, np.abs),
    (L.floor, {}, np.floor),
    (L.softsign, {}, lambda x: x / (1 + np.abs(x))),
    (L.leaky_relu, {"alpha": 0.1}, lambda x: np.where(x > 0, x, 0.1 * x)),
    (L.relu6, {"threshold": 1.0}, lambda x: np.clip(x, 0, 1.0)),
    (L.elu, {"alpha": 0.5}, lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    (L.swish, {"beta": 2.0}, lambda x: x / (1 + np.exp(-2 * x))),
    (L.hard_sigmoid, {}, lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
]


@pytest.mark.parametrize("layer, attrs, ref", ACTIVATIONS, ids=[a[0].__name__ for a in ACTIVATIONS])
def test_activation_layers(progs, layer, attrs, ref):
    main, startup = progs
    x = L.data("x", [5])
    out = layer(x, **attrs)
    (op,) = main.global_block().ops
    assert op.type == layer.__name__ and out.shape == (-1, 5)
    for k, v in attrs.items():
        assert op.attr(k) == pytest.approx(v)
    xv = np.linspace(-2, 2, 10, dtype=np.float32).reshape(2, 5)
    (got,) = run(main, startup, {"x": xv}, [out])
    np.testing.assert_allclose(got, ref(xv), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer, ref", [
    (L.reduce_sum, np.sum), (L.reduce_mean, np.mean), (L.reduce_max, np.max),
    (L.reduce_min, np.min), (L.reduce_prod, np.prod),
])
def test_reduce_layers(progs, layer, ref):
    main, startup = progs
    x = L.data("x", [3, 4])
    a = layer(x)
    b = layer(x, dim=-1, keep_dim=True)
    c = layer(x, dim=[0, 2])
    ops = main.global_block().ops
    assert ops[0].attr("reduce_all") and a.shape == ()              # 0-D, as in Paddle 3
    assert ops[1].attr("dim") == [-1] and ops[1].attr("keep_dim") and b.shape == (-1, 3, 1)
    assert ops[2].attr("dim") == [0, 2] and not ops[2].attr("reduce_all") and c.shape == (3,)
    xv = np.random.RandomState(7).rand(2, 3, 4).astype("float32") + 0.5
    ga, gb, gc = run(main, startup, {"x": xv}, [a, b, c])
    assert ga.shape == ()
    np.testing.assert_allclose(ga, ref(xv), rtol=1e-5)
    np.testing.assert_allclose(gb, ref(xv, axis=-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(gc, ref(xv, axis=(0, 2)), rtol=1e-5)


def test_reduce_errors(progs):
    x = L.data("x", [3])
    with pytest.raises(LayerError, match="reduce_sum: argument 'dim' must be >= -2 and <= 1"):
        L.reduce_sum(x, dim=2)
    with pytest.raises(LayerError, match="reduce_mean: argument 'dim' repeats"):
        L.reduce_mean(x, dim=[1, -1])
    with pytest.raises(LayerError, match="reduce_max: argument 'keep_dim' must be a bool"):
        L.reduce_max(x, keep_dim="yes")


def test_mul_matmul_scale_mean(progs):
    main, startup = progs
    x = L.data("x", [2, 3], append_batch_size=False)
    y = L.data("y", [3, 4], append_batch_size=False)
    m = L.mul(x, y)
    mm = L.matmul(y, x, transpose_x=True, transpose_y=True, alpha=2.0)
    s = L.scale(m, scale=3.0, bias=1.0, bias_after_scale=False, act="relu")
    mean = L.mean(s)
    ops = main.global_block().ops
    assert types(main) == ["mul", "matmul", "scale", "relu", "mean"]
    assert ops[1].attr("transpose_X") and ops[1].attr("transpose_Y") and ops[1].attr("alpha") == 2
    assert not ops[2].attr("bias_after_scale")
    assert (m.shape, mm.shape, s.shape, mean.shape) == ((2, 4), (4, 2), (2, 4), ())
    xv = np.random.RandomState(8).randn(2, 3).astype("float32")
    yv = np.random.RandomState(9).randn(3, 4).astype("float32")
    gm, gmm, gs, gmean = run(main, startup, {"x": xv, "y": yv}, [m, mm, s, mean])
    np.testing.assert_allclose(gm, xv @ yv, rtol=1e-5)
    np.testing.assert_allclose(gmm, 2 * yv.T @ xv.T, rtol=1e-5)
    np.testing.assert_allclose(gs, np.maximum(3 * (xv @ yv + 1), 0), rtol=1e-5)
    assert gmean.shape == ()
    np.testing.assert_allclose(gmean, gs.mean(), rtol=1e-5)
    with pytest.raises(LayerError, match="mul: argument 'x_num_col_dims' must be >= 1"):
        L.mul(x, y, x_num_col_dims=0)


# -- tensor layers -----------------------------------------------------------------------------

def test_tensor_creation_layers(progs):
    main, startup = progs
    f = L.fill_constant([2, 3], "int64", 7)
    z, o = L.zeros([2], "float32"), L.ones([1, 2], "float64")
    a = L.assign(np.array([[1.5, 2.5]], dtype="float32"))
    ai = L.assign(np.array([4, 5], dtype="int64"))
    s = L.sums([z, z, L.assign(np.array([1.0, 2.0], "float32"))])
    g = L.create_global_var([2], 0.5, "float32", persistable=True, name="gvar")
    t = L.create_tensor("float32", name="t")
    c = L.cast(f, "float32")
    assert (f.shape, f.dtype, f.stop_gradient) == ((2, 3), "int64", True)
    assert main.global_block().ops[0].attr("dtype") == 3 and \
        main.global_block().ops[0].attr("value") == 7
    assert a.shape == (1, 2) and main.global_block().ops[3].attr("fp32_values") == [1.5, 2.5]
    assert main.global_block().ops[4].attr("int64_values") == [4, 5]
    assert g.persistable and g.name == "gvar" and "gvar" not in \
        [n for op in main.global_block().ops for n in op.output_arg_names]
    (init,) = [op for op in startup.global_block().ops if op.output("Out") == ["gvar"]]
    assert init.type == "fill_constant" and init.attr("value") == 0.5
    assert t.name == "t" and t.dtype == "float32" and t.op is None
    cast = main.global_block().ops[-1]
    assert cast.attr("in_dtype") == 3 and cast.attr("out_dtype") == 5
    got = run(main, startup, {}, [f, z, o, a, ai, s, g, c])
    expected = [np.full((2, 3), 7), np.zeros(2), np.ones((1, 2)), [[1.5, 2.5]], [4, 5],
                [1.0, 2.0], [0.5, 0.5], np.full((2, 3), 7.0)]
    for value, want in zip(got, expected):
        np.testing.assert_array_equal(value, want)
    assert got[2].dtype == np.float64 and got[4].dtype == np.int64


def test_create_global_var_defaults(progs):
    main, startup = progs
    g = L.create_global_var([1], 2.0, "int64")
    assert g.name == "global_var_0" and g.persistable and g.stop_gradient
    assert startup.global_block().var("global_var_0").persistable
    y = g + 1
    (got,) = run(main, startup, {}, [y])
    assert got.tolist() == [3]


def test_create_parameter_layer(progs):
    main, startup = progs
    p = L.create_parameter([3, 2], "float32")
    b = L.create_parameter([2], "float32", name="mybias", is_bias=True)
    assert p.name == "create_parameter_0.w_0" and isinstance(p, hr.Parameter)
    assert b.name == "mybias"
    assert types(startup) == ["uniform_random", "fill_constant"]  # Xavier, Constant(0)
    assert not main.global_block().ops


def test_shape_layers(progs):
    main, startup = progs
    x = L.data("x", [2, 6])
    r = L.reshape(x, [0, 3, -1])
    t = L.transpose(r, [0, 2, 1])
    parts = L.split(t, [1, -1], dim=1)
    eq = L.split(x, 3, dim=-1)
    c = L.concat([eq[2], eq[0]], axis=2)
    assert (r.shape, t.shape) == ((-1, 3, 4), (-1, 4, 3))
    assert [p.shape for p in parts] == [(-1, 1, 3), (-1, 3, 3)]
    assert [p.shape for p in eq] == [(-1, 2, 2)] * 3 and c.shape == (-1, 2, 4)
    ops = main.global_block().ops
    assert ops[0].attr("shape") == [0, 3, -1] and len(ops[0].output("XShape")) == 1
    assert ops[1].attr("axis") == [0, 2, 1]
    assert ops[2].attr("sections") == [1, -1] and ops[2].attr("num") == 0
    assert ops[3].attr("num") == 3 and ops[3].attr("axis") == 2
    xv = np.arange(24, dtype=np.float32).reshape(2, 2, 6)
    gr, gt, gp, gc = run(main, startup, {"x": xv}, [r, t, parts[1], c])
    np.testing.assert_array_equal(gr, xv.reshape(2, 3, 4))
    np.testing.assert_array_equal(gt, xv.reshape(2, 3, 4).transpose(0, 2, 1))
    np.testing.assert_array_equal(gp, gt[:, 1:])
    np.testing.assert_array_equal(gc, np.concatenate([xv[:, :, 4:], xv[:, :, :2]], axis=2))


@pytest.mark.parametrize("call, message", [
    (lambda x: L.reshape(x, [-1, -1]), "reshape: argument 'shape' may hold one -1 only"),
    (lambda x: L.reshape(x, [0, 0, 0, 0]), "reshape: argument 'shape' has 0 at index 3"),
    (lambda x: L.transpose(x, [0, 0, 1]), "transpose: argument 'perm' must be a permutation"),
    (lambda x: L.split(x, 0), "split: argument 'num_or_sections' must be >= 1"),
    (lambda x: L.split(x, [-1, -1]), "split: argument 'num_or_sections' must list"),
    (lambda x: L.split(x, 2, dim=3), "split: argument 'dim' must be >= -3 and <= 2"),
    (lambda x: L.fill_constant([2, -1], "float32", 1.0), "fill_constant: argument 'shape'"),
    (lambda x: L.fill_constant([2], "floaty", 1.0), "fill_constant: argument 'dtype'"),
    (lambda x: L.fill_constant([2], "float32", "1"), "fill_constant: argument 'value'"),
    (lambda x: L.assign("text"), "assign: argument 'input' must be a Variable or non-empty"),
    (lambda x: L.cast(x, "nope"), "cast: argument 'dtype'"),
    (lambda x: L.concat([]), "concat: argument 'input' must be a Variable or a non-empty"),
])
def test_tensor_layer_errors(progs, call, message):
    x = L.data("x", [2, 6])
    with pytest.raises(LayerError, match=message):
        call(x)


# -- control flow ------------------------------------------------------------------------------

def test_control_flow_layers(progs):
    main, startup = progs
    i = L.fill_constant([1], "int64", 0)
    same = L.increment(i, 2.0)
    j = L.increment(i, 1.0, in_place=False)
    lt = L.less_than(j, 5)
    ge = L.greater_equal(j, i)
    eq = L.equal(i, j)
    both = L.logical_and(lt, ge)
    neither = L.logical_not(L.logical_or(lt, eq))
    x = L.data("x", [3])
    arr = L.array_write(x, i)
    L.array_write(L.scale(x, 2.0), j, array=arr)
    back = L.array_read(arr, j)
    assert same is i and j is not i
    ops = main.global_block().ops
    assert ops[1].type == "increment" and ops[1].output("Out") == [i.name]
    assert ops[1].attr("step") == 2.0
    assert (lt.dtype, both.dtype, neither.dtype) == ("bool",) * 3 and lt.stop_gradient
    assert arr.kind == "lod_tensor_array" and back.shape == (-1, 3)
    xv = np.ones((2, 3), np.float32)
    gi, gj, glt, gboth, gneither, gback = run(main, startup, {"x": xv},
                                              [i, j, lt, both, neither, back])
    assert (gi[0], gj[0], glt[0], gboth[0], gneither[0]) == (2, 3, True, True, False)
    np.testing.assert_array_equal(gback, 2 * xv)


def test_control_flow_errors(progs):
    x = L.data("x", [3])
    with pytest.raises(LayerError, match="logical_and: argument 'x' .* must have dtype bool"):
        L.logical_and(x, x)
    with pytest.raises(LayerError, match="array_write: argument 'i' .* must have dtype int64"):
        L.array_write(x, x)
    with pytest.raises(LayerError, match="array_read: argument 'array' must be a tensor array"):
        L.array_read(x, L.fill_constant([1], "int64", 0))
    with pytest.raises(LayerError, match="less_than: argument 'y' must be a number"):
        L.less_than(x, "3")
