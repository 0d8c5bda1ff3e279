"""slice and strided_slice: Paddle's index normalization against NumPy slicing, the shape rule
(-1 dims, run-time starts/ends, decrease_axis), errors that name the op and the attribute, and
the gradients against finite differences."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients, run_op


def _run(op, x, **attrs):
    full = {"starts": [], "ends": [], "decrease_axis": []}
    full.update(attrs)
    (out,) = run_op(op, {"Input": x}, attrs=full)["Out"]
    return out.numpy()


X = np.arange(60.0).reshape(3, 4, 5)


@pytest.mark.parametrize("axes, starts, ends, index", [
    ([0], [1], [3], np.s_[1:3]),
    ([1, 2], [-3, 1], [100, -1], np.s_[:, -3:, 1:-1]),       # from the end; clamped
    ([2], [-100], [2], np.s_[:, :, :2]),
    ([0, 2], [2, 5], [2, 5], np.s_[2:2, :, 5:5]),             # empty slices
    ([-1], [0], [2], np.s_[:, :, 0:2]),                       # a negative axis
])
def test_slice_is_numpy_slicing(axes, starts, ends, index):
    np.testing.assert_array_equal(_run("slice", X, axes=axes, starts=starts, ends=ends),
                                  X[index])


@pytest.mark.parametrize("starts, ends, strides, index", [
    ([0], [5], [2], np.s_[::2]),
    ([4], [-1], [-1], np.s_[::-1]),          # end -1 with a negative stride: through element 0
    ([-1], [-1], [-2], np.s_[::-2]),
    ([100], [0], [-2], np.s_[:0:-2]),        # the start clamps to the last element
    ([3], [-4], [-1], np.s_[3:1:-1]),        # an end below -1 counts from the end
    ([-4], [100], [3], np.s_[1::3]),
])
def test_strided_slice_is_numpy_slicing(starts, ends, strides, index):
    got = _run("strided_slice", X, axes=[2], starts=starts, ends=ends, strides=strides)
    np.testing.assert_array_equal(got, X[:, :, index[0] if isinstance(index, tuple) else index])


def test_decrease_axis_drops_size_one_axes_down_to_0_d():
    np.testing.assert_array_equal(
        _run("slice", X, axes=[0, 2], starts=[1, -1], ends=[2, 100], decrease_axis=[0, 2]),
        X[1, :, -1])
    out = _run("slice", X, axes=[0, 1, 2], starts=[2, 3, 4], ends=[3, 4, 5],
               decrease_axis=[0, 1, 2])
    assert out.shape == () and out == X[2, 3, 4]
    # Paddle's spelling of x[..., -1] in strided_slice: start -1, end 0, infer flag -1
    got = _run("strided_slice", X, axes=[2], starts=[-1], ends=[0], strides=[1],
               infer_flags=[-1], decrease_axis=[2])
    np.testing.assert_array_equal(got, X[:, :, -1])


def test_starts_and_ends_from_tensors():
    i64 = np.int64
    inputs = {"Input": X, "StartsTensor": np.array([1, -2], i64),
              "EndsTensorList": [np.array([3], np.int32), np.array([5], i64)]}
    (out,) = run_op("slice", inputs, attrs={"axes": [1, 2], "starts": [], "ends": [0, 0]})["Out"]
    np.testing.assert_array_equal(out.numpy(), X[:, 1:3, -2:5])
    inputs = {"Input": X, "StridesTensor": np.array([-1], i64)}
    (out,) = run_op("strided_slice", inputs, attrs={"axes": [0], "starts": [-1], "ends": [-1],
                                                    "strides": []})["Out"]
    np.testing.assert_array_equal(out.numpy(), X[::-1])


def _program(op, shape, **attrs):
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=shape, dtype="float64", need_check_feed=True)
    out = g.create_var(name="out", dtype="float64")
    full = {"starts": [], "ends": [], "decrease_axis": []}
    full.update(attrs)
    inputs = {"Input": x}
    for slot in ("StartsTensor", "EndsTensor"):
        if slot in full:
            inputs[slot] = g.create_var(name=slot, shape=[full.pop(slot)], dtype="int64")
    g.append_op(op, inputs, {"Out": out}, full)
    return prog, out


def test_shape_rule_with_unknown_dims_and_runtime_values():
    _, out = _program("slice", [-1, 4, 5], axes=[0, 1], starts=[1, 1], ends=[2, -1])
    assert list(out.shape) == [-1, 2, 5]          # an unknown dim stays unknown
    _, out = _program("slice", [-1, 4, 5], axes=[0, 2], starts=[0, 1], ends=[1, 2],
                      decrease_axis=[0, 2])
    assert list(out.shape) == [4]
    _, out = _program("strided_slice", [3, 4, 5], axes=[1, 2], starts=[3, 0], ends=[-1, 5],
                      strides=[-1, 2])
    assert list(out.shape) == [3, 4, 3]
    _, out = _program("slice", [3, 4, 5], axes=[1], starts=[0], ends=[1], infer_flags=[-1])
    assert list(out.shape) == [3, -1, 5]         # infer_flags -1: known at run time
    _, out = _program("slice", [3, 4, 5], axes=[2], StartsTensor=1, ends=[3])
    assert list(out.shape) == [3, 4, -1]


def test_shape_rule_errors_name_the_op_and_attribute():
    with pytest.raises(hr.HeadraceError, match=r"slice.*attribute 'axes' names a dim"):
        _program("slice", [3, 4], axes=[2], starts=[0], ends=[1])
    with pytest.raises(hr.HeadraceError, match="attribute 'axes' names a dim twice"):
        _program("slice", [3, 4], axes=[1, -1], starts=[0, 0], ends=[1, 1])
    with pytest.raises(hr.HeadraceError, match="attribute 'ends' must hold one value per"):
        _program("slice", [3, 4], axes=[0, 1], starts=[0, 0], ends=[1])
    with pytest.raises(hr.HeadraceError, match=r"'starts'/'ends'.*end 1 before start 3"):
        _program("slice", [3, 4], axes=[1], starts=[3], ends=[1])
    with pytest.raises(hr.HeadraceError, match=r"strided_slice.*attribute 'strides' holds a 0"):
        _program("strided_slice", [3, 4], axes=[1], starts=[0], ends=[4], strides=[0])
    with pytest.raises(hr.HeadraceError, match="negative step"):
        _program("strided_slice", [3, 4], axes=[1], starts=[0], ends=[3], strides=[-1])
    with pytest.raises(hr.HeadraceError, match="'decrease_axis' drops axis 1, whose slice "
                                               "has 2 elements"):
        _program("slice", [3, 4], axes=[1], starts=[0], ends=[2], decrease_axis=[1])


def test_kernel_refuses_a_range_known_only_at_run_time():
    inputs = {"Input": X, "StartsTensor": np.array([3], np.int64)}
    with pytest.raises(hr.HeadraceError, match=r"slice: along axis 1 \(size 4\) the end 1 "
                                               r"comes before the start 3"):
        run_op("slice", inputs, attrs={"axes": [1], "starts": [], "ends": [1]})
    # (the kernel itself, given a StartsTensor the shape rule could not see the length of)
    from headrace_tensor.kernels.cpu.slice import Slice
    kernel = Slice({"axes": [1], "starts": [], "ends": [1], "infer_flags": [],
                    "decrease_axis": []})
    with pytest.raises(ValueError, match="slice: 'starts' holds 2 values for 1 axes"):
        kernel(X, np.array([0, 1], np.int64), None, None, None)


def test_layers():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[4, 5], dtype="float64")
        begin = layers.fill_constant([1], "int32", 1)
        a = layers.slice(x, axes=[1, 2], starts=[1, -2], ends=[3, 100])
        b = layers.slice(x, axes=[2], starts=[begin], ends=[4])
        c = layers.strided_slice(x, axes=[1, 2], starts=[-1, 0], ends=[-1, 5], strides=[-1, 2])
    assert list(a.shape) == [-1, 2, 2] and list(b.shape) == [-1, 4, -1]
    assert list(c.shape) == [-1, 4, 3]
    got = hr.Executor().run(main, feed={"x": X}, fetch_list=[a, b, c], scope=hr.Scope())
    for g, want in zip(got, [X[:, 1:3, -2:], X[:, :, 1:4], X[:, ::-1, ::2]]):
        np.testing.assert_array_equal(g, want)
    # the kernel keeps the index of the last shape: a new batch size gets its own
    exe, scope = hr.Executor(), hr.Scope()
    for rows in (3, 1, 3):
        (got,) = exe.run(main, feed={"x": X[:rows]}, fetch_list=[a], scope=scope)
        np.testing.assert_array_equal(got, X[:rows, 1:3, -2:])
    with pytest.raises(hr.HeadraceError, match="slice: argument 'starts' must be a list of 2"):
        layers.slice(x, axes=[1, 2], starts=[0], ends=[1, 1])


@pytest.mark.parametrize("op, attrs", [
    ("slice", dict(axes=[0, 2], starts=[1, -4], ends=[3, -1], decrease_axis=[])),
    ("slice", dict(axes=[1], starts=[2], ends=[3], decrease_axis=[1])),
    ("strided_slice", dict(axes=[1, 2], starts=[-1, 0], ends=[-1, 5], strides=[-2, 3],
                           decrease_axis=[])),
])
def test_gradient_matches_finite_differences(op, attrs):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        p = layers.create_parameter([3, 4, 5], "float64", name="P")
        g = main.global_block()
        out = g.create_var(name="out", dtype="float64")
        g.append_op(op, {"Input": p}, {"Out": out}, attrs)
        loss = layers.mean(layers.elementwise_mul(out, layers.sin(out)))
        hr.append_backward(loss)
    assert op + "_grad" in [o.type for o in main.global_block().ops]
    analytic, numeric = program_gradients(main, startup, loss, ["P"], {})
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-6, atol=1e-8)
    assert (analytic["P"] == 0).any()  # the elements left out get no gradient
