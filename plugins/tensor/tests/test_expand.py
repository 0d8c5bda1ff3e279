"""expand_v2, expand_as_v2 and expand: NumPy broadcasting and tiling, Paddle's rules for the
target shape (-1 keeps a dim, new leading dims, shapes from tensors, Y over target_shape), the
shape rule with unknown dims, LoD, errors that name the op and the attribute, and the
gradients against finite differences through the Executor."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime import Tensor
from headrace.testing import check_grad, run_op

X = np.arange(6.0).reshape(2, 1, 3)


def _out(op, inputs, **attrs):
    (out,) = run_op(op, inputs, attrs=attrs)["Out"]
    return out


@pytest.mark.parametrize("shape", [
    [2, 4, 3], [-1, 4, -1], [5, 2, 4, 3], [5, -1, 4, -1], [2, 1, 3], [2, 0, 3], [0, 2, 4, 3],
    [1, 1, 1, 1, 1, 2, 4, 3],
])
def test_expand_v2_is_numpy_broadcasting(shape):
    want = [d if v == -1 else v for d, v in
            zip([None] * (len(shape) - 3) + list(X.shape), shape)]
    out = _out("expand_v2", {"X": X}, shape=shape).numpy()
    np.testing.assert_array_equal(out, np.broadcast_to(X, want))
    assert out.flags.writeable and out.flags.c_contiguous          # a copy, not a view


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64"])
def test_expand_v2_dtypes_and_0_d(dtype):
    x = np.array([[1], [0]]).astype(dtype)
    out = _out("expand_v2", {"X": x}, shape=[2, 3]).numpy()
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.broadcast_to(x, (2, 3)))
    # (a 0-D X: every target dim is new)
    (out,) = run_op("expand_v2", {"X": np.array(3.0)}, attrs={"shape": [2, 3]})["Out"]
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 3.0))


def test_expand_v2_shape_from_tensors():
    i32, i64 = np.int32, np.int64
    out = _out("expand_v2", {"X": X, "Shape": np.array([3, 2, 4, 3], i32)}, shape=[]).numpy()
    np.testing.assert_array_equal(out, np.broadcast_to(X, (3, 2, 4, 3)))
    # Shape wins over the list, the list over the attribute (Paddle's order)
    lst = [np.array([3], i32), np.array([2], i64), np.array([4], i32), np.array([-1], i64)]
    out = _out("expand_v2", {"X": X, "expand_shapes_tensor": lst}, shape=[9, 9, 9, 9])
    assert out.shape == (3, 2, 4, 3)        # (a hint that cannot hold is no error: Paddle's)
    out = _out("expand_v2", {"X": X, "Shape": np.array([2, 5, 3], i64),
                             "expand_shapes_tensor": lst}, shape=[])
    assert out.shape == (2, 5, 3)


def test_expand_as_v2_takes_y_over_target_shape():
    y = np.zeros((7, 2, 5, 3))
    # (Paddle 3.3.1 gives [7, 2, 5, 3] here: Y's dims decide at run time)
    out = _out("expand_as_v2", {"X": X, "Y": y}, target_shape=[-1, 2, 4, 3])
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(X, y.shape))
    out = _out("expand_as_v2", {"X": X}, target_shape=[5, 2, 4, 3])
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(X, (5, 2, 4, 3)))
    out = _out("expand_as_v2", {"X": X.astype(np.int64), "Y": np.zeros((2, 2, 3), bool)})
    assert out.shape == (2, 2, 3) and out.dtype == "int64"


def test_expand_is_numpy_tile():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(_out("expand", {"X": x}, expand_times=[2, 3]).numpy(),
                                  np.tile(x, (2, 3)))
    out = _out("expand", {"X": x, "ExpandTimes": np.array([1, 2], np.int32)})
    np.testing.assert_array_equal(out.numpy(), np.tile(x, (1, 2)))
    out = _out("expand", {"X": x, "expand_times_tensor": [np.array([3], np.int64),
                                                           np.array([0], np.int32)]})
    assert out.shape == (6, 0)


def _program(op, xshape, lod_level=0, **slots_and_attrs):
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=xshape, dtype="float64", lod_level=lod_level)
    inputs = {"X": x}
    attrs = {}
    for k, v in slots_and_attrs.items():
        if k in ("Shape", "ExpandTimes"):
            inputs[k] = g.create_var(name=k, shape=[v], dtype="int32")
        elif k in ("expand_shapes_tensor", "expand_times_tensor"):
            inputs[k] = [g.create_var(name=f"{k}{i}", shape=[1], dtype="int64")
                         for i in range(v)]
        elif k == "Y":
            inputs[k] = g.create_var(name="y", shape=v, dtype="float32")
        else:
            attrs[k] = v
    out = g.create_var(name="out", dtype="float64")
    g.append_op(op, inputs, {"Out": out}, attrs)
    return prog, out


@pytest.mark.parametrize("op, shape, kw, want", [
    ("expand_v2", [-1, 1, 3], dict(shape=[-1, 4, -1]), [-1, 4, 3]),
    ("expand_v2", [-1, 1, 3], dict(shape=[5, -1, 4, 3]), [5, -1, 4, 3]),
    ("expand_v2", [2, 1, 3], dict(Shape=3), [2, -1, 3]),             # values known at run time
    ("expand_v2", [2, 1, 3], dict(Shape=3, shape=[-1, 4, -1]), [2, 4, 3]),   # attribute hints
    ("expand_v2", [2, 1, 3], dict(expand_shapes_tensor=4), [-1, 2, -1, 3]),
    ("expand_as_v2", [2, 1, 3], dict(Y=[-1, 2, 4, 3]), [-1, 2, 4, 3]),
    ("expand_as_v2", [2, 1, 3], dict(Y=[-1, 2, -1, 3], target_shape=[-1, 2, 7, 3]),
     [-1, 2, 7, 3]),
    ("expand_as_v2", [2, 1, 3], dict(target_shape=[2, 5, 3]), [2, 5, 3]),
    ("expand", [-1, 2], dict(expand_times=[2, 3]), [-1, 6]),
    ("expand", [4, 2], dict(ExpandTimes=2), [-1, -1]),
])
def test_shape_rule(op, shape, kw, want):
    _, out = _program(op, shape, **kw)
    assert list(out.shape) == want


@pytest.mark.parametrize("op, shape, kw, match", [
    ("expand_v2", [2, 1, 3], dict(shape=[4, 3]),
     r"expand_v2.*attribute 'shape' must have at least as many dims as X"),
    ("expand_v2", [2, 1, 3], dict(shape=[4, 4, 3]),
     r"dim 0 of X .* is 2, not 1, so attribute 'shape' must keep it"),
    ("expand_v2", [2, 1, 3], dict(shape=[-1, 2, 4, 3]),
     r"attribute 'shape' holds -1 for a new leading dim"),
    ("expand_v2", [2, 1, 3], dict(shape=[2, -2, 3]), r"attribute 'shape' holds -2 for dim 1"),
    ("expand_v2", [1], dict(shape=[1] * 9), r"more dims than the expand ops support"),
    ("expand_as_v2", [2, 1, 3], dict(target_shape=[2, -1, 3]),
     r"expand_as_v2.*'target_shape' has a negative dim and no input 'Y' gives it"),
    ("expand_as_v2", [2, 1, 3], dict(Y=[2, 4, 3], target_shape=[5, 2, 4, 3]),
     r"'target_shape' and input 'Y' \(y\) disagree on the rank"),
    ("expand_as_v2", [2, 1, 3], dict(Y=[3, 4, 3]),
     r"dim 0 of X .* is 2, not 1, so the shape of Y must keep it"),
    ("expand_as_v2", [2, 1, 3], {}, r"needs input 'Y' or attribute 'target_shape'"),
    ("expand", [2, 3], dict(expand_times=[2]),
     r"expand.*attribute 'expand_times' must hold one factor per dim of X"),
    ("expand", [2, 3], dict(expand_times=[2, -1]), r"'expand_times' holds a negative factor"),
])
def test_shape_rule_errors_name_the_op_and_attribute(op, shape, kw, match):
    with pytest.raises(hr.HeadraceError, match=match):
        _program(op, shape, **kw)


def test_kernel_refuses_a_shape_known_only_at_run_time():
    with pytest.raises(hr.HeadraceError, match=r"expand_v2: dim 0 of X \[2, 1, 3\] is 2, not "
                                               r"1, but the target shape \[4, 4, 3\]"):
        run_op("expand_v2", {"X": X, "Shape": np.array([4, 4, 3], np.int32)})
    with pytest.raises(hr.HeadraceError, match=r"expand_v2.* holds -1 for a new leading dim"):
        run_op("expand_v2", {"X": X, "Shape": np.array([-1, 2, 4, 3], np.int64)})
    with pytest.raises(hr.HeadraceError, match=r"expand_v2.*input 'Shape' .* unsupported "
                                               r"dtype"):
        run_op("expand_v2", {"X": X, "Shape": np.array([2.0, 4.0, 3.0])})
    from headrace_tensor.kernels.cpu.expand import ExpandV2
    with pytest.raises(TypeError, match=r"expand_v2: input 'Shape' must hold integers"):
        ExpandV2({"shape": []})(X, np.array([2.0, 4.0, 3.0]))
    with pytest.raises(hr.HeadraceError, match=r"expand: the factors \[2, -1\] must be >= 0"):
        run_op("expand", {"X": X[0], "ExpandTimes": np.array([2, -1], np.int32)})


@pytest.mark.parametrize("lod", [[[0, 2]], [[0, 0, 2]], [[0, 0, 0]], [[0, 2, 2], [0, 2, 2]],
                                 [[0, 1], [0, 0]]])
def test_lod_is_kept_when_dim_0_is(lod):
    rows = lod[-1][-1]
    x = Tensor(np.arange(rows * 3.0).reshape(rows, 1, 3), lod)
    prog, out = _program("expand_v2", [-1, 1, 3], lod_level=len(lod), shape=[-1, 4, 3])
    assert out.lod_level == len(lod)
    got = hr.Executor().run(prog, feed={"x": x}, fetch_list=[out], return_numpy=False,
                            scope=hr.Scope())[0]
    assert [list(level) for level in got.lod] == lod
    np.testing.assert_array_equal(np.asarray(got.data), np.broadcast_to(x.data, (rows, 4, 3)))
    _, out = _program("expand_v2", [-1, 1, 3], lod_level=len(lod), shape=[2, -1, 4, 3])
    assert out.lod_level == 0           # a new dim 0: the LoD no longer applies


@pytest.mark.parametrize("op, inputs, attrs", [
    ("expand_v2", {"X": np.random.default_rng(0).standard_normal((2, 1, 3))},
     {"shape": [4, -1, 5, 3]}),
    ("expand_v2", {"X": np.random.default_rng(1).standard_normal((3,)),
                   "Shape": np.array([2, 3], np.int64)}, {}),
    ("expand_v2", {"X": np.random.default_rng(1).standard_normal((1, 1))},
     {"shape": [3, 1]}),                                  # nothing to sum along dim 1
    ("expand_as_v2", {"X": np.random.default_rng(2).standard_normal((1, 3)),
                      "Y": np.zeros((2, 4, 3))}, {}),
    ("expand", {"X": np.random.default_rng(3).standard_normal((2, 3))},
     {"expand_times": [3, 2]}),
    ("expand", {"X": np.random.default_rng(4).standard_normal((2, 1, 3)),
                "expand_times_tensor": [np.array([1], np.int32), np.array([4], np.int32),
                                        np.array([1], np.int32)]}, {}),
])
def test_gradient_matches_finite_differences(op, inputs, attrs):
    check_grad(op, inputs, wrt=["X"], attrs=attrs)


def test_gradient_kernels_refuse_what_is_no_expansion():
    g = np.ones((2, 4, 3))
    with pytest.raises(hr.HeadraceError, match=r"expand_v2_grad: Out@GRAD \[2, 4, 3\] is not "
                                               r"an expansion of X \[2, 2, 3\]"):
        run_op("expand_v2_grad", {"X": np.ones((2, 2, 3)), "Out@GRAD": g}, ["X@GRAD"])
    with pytest.raises(hr.HeadraceError, match=r"expand_grad: Out@GRAD \[2, 4, 3\] is not a "
                                               r"tiling of X \[2, 3, 3\]"):
        run_op("expand_grad", {"X": np.ones((2, 3, 3)), "Out@GRAD": g}, ["X@GRAD"])
    (dx,) = run_op("expand_grad", {"X": np.ones((2, 0)), "Out@GRAD": np.ones((4, 0))},
                   ["X@GRAD"])["X@GRAD"]
    assert dx.shape == (2, 0)
