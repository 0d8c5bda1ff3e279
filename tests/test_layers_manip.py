"""layers.manip (expand, expand_as, pad, label_smooth, uniform_random, gaussian_random) and
fill_constant's shapes given at run time: the ops they append (Paddle's slots and
attributes), results against NumPy, gradients against finite differences, argument errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import LayerError
from headrace.testing import program_gradients, run_programs

L = hr.layers
X = np.arange(6.0, dtype=np.float32).reshape(2, 1, 3)


def _op(main, op_type):
    (op,) = [op for op in main.global_block().ops if op.type == op_type]
    return op


def test_expand_with_ints(progs):
    main, startup = progs
    x = L.data("x", [2, 1, 3], append_batch_size=False)
    out = L.expand(x, [4, -1, 5, 3])
    op = _op(main, "expand_v2")
    assert op.attr("shape") == [4, -1, 5, 3] and op.input("Shape") == []
    assert list(out.shape) == [4, 2, 5, 3]
    (got,) = run_programs(main, startup, {"x": X}, [out])
    np.testing.assert_array_equal(got, np.broadcast_to(X, (4, 2, 5, 3)))


def test_expand_with_variables(progs):
    main, startup = progs
    x = L.data("x", [2, 1, 3], append_batch_size=False)
    n = L.data("n", [1], dtype="int64", append_batch_size=False)
    shape = L.data("shape", [3], dtype="int32", append_batch_size=False)
    a = L.expand(x, [n, 2, 4, 3])          # a Variable among ints: expand_shapes_tensor
    b = L.expand(x, shape)                 # a 1-D Variable: Shape
    op_a = [op for op in main.global_block().ops if op.type == "expand_v2"][0]
    assert op_a.attr("shape") == [-1, 2, 4, 3] and len(op_a.input("expand_shapes_tensor")) == 4
    assert list(a.shape) == [-1, 2, 4, 3]
    assert list(b.shape) == [2, -1, 3]    # (dims of x other than 1 can only be kept)
    got = run_programs(main, startup, {"x": X, "n": np.array([5]),
                                       "shape": np.array([-1, 6, -1], np.int32)}, [a, b])
    np.testing.assert_array_equal(got[0], np.broadcast_to(X, (5, 2, 4, 3)))
    np.testing.assert_array_equal(got[1], np.broadcast_to(X, (2, 6, 3)))


def test_expand_as(progs):
    main, startup = progs
    x = L.data("x", [1, 3])
    y = L.data("y", [4, 3])
    out = L.expand_as(x, y)
    op = _op(main, "expand_as_v2")
    assert op.input("Y") == [y.name] and op.attr("target_shape") == [-1, 4, 3]
    assert list(out.shape) == [-1, 4, 3]
    xv = np.arange(6.0, dtype=np.float32).reshape(2, 1, 3)
    (got,) = run_programs(main, startup, {"x": xv, "y": np.zeros((2, 4, 3), np.float32)},
                          [out])
    np.testing.assert_array_equal(got, np.broadcast_to(xv, (2, 4, 3)))


@pytest.mark.parametrize("build", [
    lambda p, y: L.expand(p, [3, 2, 4, 5]),
    lambda p, y: L.expand_as(p, y),
    lambda p, y: L.pad(p, [1, 0, 0, 2, 1, 1], pad_value=0.5),
])
def test_gradients_through_the_layers(progs, build):
    main, startup = progs
    p = L.create_parameter([2, 1, 5], "float64", name="P")
    y = L.data("y", [3, 2, 4, 5], dtype="float64", append_batch_size=False)
    out = build(p, y)
    loss = L.mean(L.elementwise_mul(out, L.sin(out)))
    hr.append_backward(loss)
    feed = {"y": np.zeros((3, 2, 4, 5))}
    analytic, numeric = program_gradients(main, startup, loss, ["P"], feed)
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-6, atol=1e-8)


def test_pad(progs):
    main, startup = progs
    x = L.data("x", [2, 3], append_batch_size=False)
    out = L.pad(x, [1, 0, 2, 1], pad_value=1.5)
    op = _op(main, "pad")
    assert op.attr("paddings") == [1, 0, 2, 1] and op.attr("pad_value") == 1.5
    assert list(out.shape) == [3, 6]
    xv = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    (got,) = run_programs(main, startup, {"x": xv}, [out])
    np.testing.assert_array_equal(got, np.pad(xv, [(1, 0), (2, 1)], constant_values=1.5))


def test_label_smooth(progs):
    main, startup = progs
    label = L.data("label", [3])
    prior = L.data("prior", [1, 3], append_batch_size=False)
    a = L.label_smooth(label, epsilon=0.1)
    b = L.label_smooth(label, prior_dist=prior, epsilon=0.2)
    ops = [op for op in main.global_block().ops if op.type == "label_smooth"]
    assert ops[0].attr("epsilon") == np.float32(0.1) and ops[0].input("PriorDist") == []
    assert ops[1].input("PriorDist") == [prior.name]
    onehot = np.eye(3, dtype=np.float32)[[0, 2]]
    pv = np.array([[0.2, 0.3, 0.5]], np.float32)
    got = run_programs(main, startup, {"label": onehot, "prior": pv}, [a, b])
    np.testing.assert_allclose(got[0], onehot * 0.9 + 0.1 / 3, rtol=1e-6)
    np.testing.assert_allclose(got[1], onehot * 0.8 + 0.2 * pv, rtol=1e-6)


def test_label_smooth_gradient(progs):
    main, startup = progs
    p = L.create_parameter([4, 3], "float64", name="P")
    loss = L.mean(L.elementwise_mul(L.label_smooth(p, epsilon=0.3, dtype="float64"),
                                    L.sin(p)))
    hr.append_backward(loss)
    analytic, numeric = program_gradients(main, startup, loss, ["P"], {})
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-6, atol=1e-8)


def test_fill_constant_with_shapes_and_values_from_variables(progs):
    main, startup = progs
    n = L.data("n", [1], dtype="int32", append_batch_size=False)
    shape = L.data("shape", [2], dtype="int64", append_batch_size=False)
    v = L.data("v", [1], dtype="int64", append_batch_size=False)
    a = L.fill_constant([n, 3], "float32", 1.5)
    b = L.fill_constant(shape, "int64", 7)
    c = L.fill_constant([2], "float32", v)          # an int64 value cast to float32
    ops = [op for op in main.global_block().ops if op.type == "fill_constant"]
    assert ops[-3].attr("shape") == [-1, 3] and len(ops[-3].input("ShapeTensorList")) == 2
    assert ops[-2].input("ShapeTensor") == [shape.name] and ops[-2].attr("shape") == []
    assert len(ops[-1].input("ValueTensor")) == 1
    assert list(a.shape) == [-1, 3] and list(b.shape) == [-1, -1] and list(c.shape) == [2]
    got = run_programs(main, startup, {"n": np.array([4], np.int32),
                                       "shape": np.array([2, 5]), "v": np.array([9])},
                       [a, b, c])
    np.testing.assert_array_equal(got[0], np.full((4, 3), 1.5, np.float32))
    assert got[1].dtype == np.int64 and got[1].shape == (2, 5) and (got[1] == 7).all()
    assert got[2].dtype == np.float32 and (got[2] == 9).all()


def test_random_layers_with_shapes_from_variables(progs):
    main, startup = progs
    main.random_seed = 5
    n = L.data("n", [1], dtype="int64", append_batch_size=False)
    u = L.uniform_random([n, 500], min=2.0, max=3.0)
    g = L.gaussian_random([400, n], mean=1.0, std=0.5, dtype="float64")
    op = _op(main, "uniform_random")
    assert op.attr("shape") == [-1, 500] and len(op.input("ShapeTensorList")) == 2
    assert (op.attr("min"), op.attr("max")) == (2.0, 3.0)
    assert list(u.shape) == [-1, 500] and u.stop_gradient
    got_u, got_g = run_programs(main, startup, {"n": np.array([3])}, [u, g])
    assert got_u.shape == (3, 500) and got_u.dtype == np.float32
    assert 2.0 <= got_u.min() and got_u.max() < 3.0
    assert got_g.shape == (400, 3) and got_g.dtype == np.float64
    assert abs(got_g.mean() - 1.0) < 0.05 and abs(got_g.std() - 0.5) < 0.05


@pytest.mark.parametrize("call, match", [
    (lambda x, i: L.expand(x, 3), r"expand: argument 'shape' must be a list of ints"),
    (lambda x, i: L.expand(x, [2, 1.5]), r"expand: argument 'shape' must be an int"),
    (lambda x, i: L.expand(x, [x, 2]), r"expand: argument 'shape' \(x\) must have dtype int32 "
                                       r"or int64"),
    (lambda x, i: L.expand(x, [2, -2]), r"expand: argument 'shape' must be >= -1, got -2"),
    (lambda x, i: L.expand_as(x, [2, 3]), r"expand_as: argument 'y' must be a Variable"),
    (lambda x, i: L.pad(x, [1, 1]), r"pad: argument 'paddings' must be a list of 4 ints"),
    (lambda x, i: L.pad(x, [1, 1, -1, 0]), r"pad: argument 'paddings' must be >= 0"),
    (lambda x, i: L.label_smooth(x, epsilon=1.5), r"label_smooth: argument 'epsilon' must be "
                                                  r">= 0.0 and <= 1.0"),
    (lambda x, i: L.label_smooth(i), r"label_smooth: argument 'label' \(i\) must have dtype "
                                     r"float32 or float64"),
    (lambda x, i: L.fill_constant(i, "float32", 1.0), r"fill_constant: argument 'shape' \(i\) "
                                                      r"must be a 1-D int Variable"),
    (lambda x, i: L.fill_constant([-1, 2], "float32", 1.0), r"fill_constant: argument "
                                                            r"'shape' must be >= 0"),
    (lambda x, i: L.uniform_random([2], min=1.0, max=1.0), r"uniform_random: argument 'max' "
                                                           r"must be > 1.0"),
    (lambda x, i: L.gaussian_random([2], dtype="int32"), r"gaussian_random: argument 'dtype' "
                                                         r"must be float32 or float64"),
])
def test_argument_errors(progs, call, match):
    x = L.data("x", [2, 3], append_batch_size=False)
    i = L.data("i", [2, 3], dtype="int64", append_batch_size=False)
    with pytest.raises(LayerError, match=match):
        call(x, i)


def test_op_errors_point_at_the_layer_call(progs):
    x = L.data("x", [2, 3], append_batch_size=False)
    with pytest.raises(hr.HeadraceError, match=r"expand_v2.*dim 0 of X .* is 2, not 1"):
        L.expand(x, [4, 3])
