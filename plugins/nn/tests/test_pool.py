"""pool2d: output-size formula against independent computations, global/adaptive, errors; the
CPU kernel against the reference."""
import itertools
import math

import numpy as np
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


def pool(x, dtype="float32", **attrs):
    attrs.setdefault("pooling_type", "max")
    return infer_shapes("pool2d", {"X": (x, dtype)}, attrs=attrs)["Out"][0]


def reference(size, k, stride, pads, ceil_mode):
    """Floor: count the windows over the padded line. Ceil: the textbook ceil formula."""
    length = size + pads[0] + pads[1]
    if length < k:
        return 0
    if ceil_mode:
        return math.ceil((length - k) / stride) + 1
    return np.lib.stride_tricks.sliding_window_view(np.zeros(length), k)[::stride].shape[0]


# Each grid point sets H; W keeps a fixed, different setting (ksize 2, stride 2, pads 0/1).
W_SIZE = 9
GRID = list(itertools.product((5, 8, 13), (1, 2, 3), (1, 2, 3),
                              ((0, 0), (1, 1), (1, 0), (0, 2)), (False, True)))


@pytest.mark.parametrize("size, k, stride, pads, ceil_mode", GRID)
def test_output_size_matches_reference(size, k, stride, pads, ceil_mode):
    want = reference(size, k, stride, pads, ceil_mode)
    w_out = reference(W_SIZE, 2, 2, (0, 1), ceil_mode)
    attrs = dict(ksize=[k, 2], strides=[stride, 2], paddings=[pads[0], pads[1], 0, 1],
                 ceil_mode=ceil_mode)
    if want <= 0:
        with pytest.raises(ShapeError, match=r"height .* is smaller than the window"):
            pool([2, 3, size, W_SIZE], **attrs)
    else:
        assert pool([2, 3, size, W_SIZE], **attrs) == ((2, 3, want, w_out), "float32")


@pytest.mark.parametrize("size, k, stride", [(s, k, st) for s, k, st, p, c in GRID
                                             if p == (0, 0) and not c])
def test_same_and_valid_padding(size, k, stride):
    attrs = dict(ksize=[k, k], strides=[stride, stride], paddings=[3, 3])
    same = pool([1, 3, size, size], padding_algorithm="SAME", **attrs)
    assert same[0] == (1, 3, math.ceil(size / stride), math.ceil(size / stride))
    want = reference(size, k, stride, (0, 0), False)
    valid = pool([1, 3, size, size], padding_algorithm="VALID", **attrs)
    assert valid[0] == (1, 3, want, want)


@pytest.mark.parametrize("x, attrs, want", [
    ([4, 3, 7, 9], {"global_pooling": True}, (4, 3, 1, 1)),
    ([-1, 3, -1, -1], {"global_pooling": True, "paddings": [2, 2]}, (-1, 3, 1, 1)),
    ([4, 7, 9, 3], {"global_pooling": True, "data_format": "NHWC"}, (4, 1, 1, 3)),
    ([4, 3, 7, 9], {"adaptive": True, "ksize": [3, 4]}, (4, 3, 3, 4)),
    ([4, 3, -1, -1], {"adaptive": True, "ksize": [1, 1]}, (4, 3, 1, 1)),
    ([4, 3, 7, 9], {"adaptive": True, "global_pooling": True}, (4, 3, 7, 9)),
    ([-1, 3, 8, 8], {}, (-1, 3, 7, 7)),
    ([-1, 3, -1, 8], {}, (-1, 3, -1, 7)),
    ([-1, -1, 8, 8], {}, (-1, -1, 7, 7)),
    ([2, 8, 8, 3], {"data_format": "NHWC"}, (2, 7, 7, 3)),
    ([2, 3, 8, 8], {"data_format": "AnyLayout"}, (2, 3, 7, 7)),
])
def test_global_adaptive_layouts_and_unknown_dims(x, attrs, want):
    attrs.setdefault("ksize", [2, 2])
    assert pool(x, **attrs) == (want, "float32")


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_out_dtype_and_lod_follow_x(dtype):
    prog, op = build_op("pool2d", {"X": ([-1, 3, 8, 8], dtype, 1)},
                        attrs={"pooling_type": "avg", "ksize": [2, 2]})
    out = prog.global_block().var(op.output("Out")[0])
    assert (out.dtype, out.lod_level) == (dtype, 1)


@pytest.mark.parametrize("x, attrs, match", [
    ([2, 3, 8], {"ksize": [2, 2]}, r"input 'X' \(x_0\) has the wrong rank"),
    ([2, 3, 1, 8], {"ksize": [3, 3]}, r"X \(x_0\) height \(1\) is smaller than the window"),
    ([2, 3, 8, 2], {"ksize": [2, 4], "paddings": [0, 0, 1, 0]},
     r"width \(2\) is smaller than the window \(4\) plus padding \(1\+0\)"),
])
def test_shape_errors(x, attrs, match):
    with pytest.raises(ShapeError, match=match):
        pool(x, **attrs)


MAX2 = {"pooling_type": "max", "ksize": [2, 2]}


@pytest.mark.parametrize("attrs, match", [
    ({"ksize": [2, 2]}, r"missing required attribute 'pooling_type'"),
    ({"pooling_type": "avg"}, r"missing required attribute 'ksize'"),
    ({**MAX2, "pooling_type": "sum"}, r"'pooling_type' must be one of \['max', 'avg'\]"),
    ({**MAX2, "ksize": [2]}, r"'ksize' must hold 2 values"),
    ({**MAX2, "ksize": [0, 2]}, r"'ksize' values must be >= 1"),
    ({**MAX2, "strides": [2, 0]}, r"'strides' values must be >= 1"),
    ({**MAX2, "paddings": [1, 1, 1]}, r"'paddings' must hold 2 or 4 values"),
    ({**MAX2, "data_format": "NCDHW"}, r"'data_format' must be one of"),
    ({**MAX2, "padding_algorithm": "same"}, r"'padding_algorithm' must be one of"),
])
def test_attribute_errors(attrs, match):
    with pytest.raises(OpValidationError, match=match):
        infer_shapes("pool2d", {"X": ([1, 3, 8, 8], "float32")}, attrs=attrs)


def test_integer_input_is_rejected():
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        pool([1, 3, 8, 8], dtype="int64", ksize=[2, 2])


# ---------------------------------------------------------------- kernel
KERNEL_CASES = [
    {"ksize": [2, 2], "strides": [2, 2]},
    {"ksize": [3, 2], "strides": [2, 1], "paddings": [1, 1]},
    {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 2, 0, 1], "ceil_mode": True},
    {"ksize": [2, 3], "strides": [3, 2], "paddings": [1, 1], "ceil_mode": True},
    {"ksize": [2, 2], "strides": [1, 1], "paddings": [3, 3]},    # windows of padding only
    {"ksize": [3, 3], "strides": [2, 2], "padding_algorithm": "SAME"},
    {"ksize": [3, 2], "strides": [2, 2], "paddings": [2, 2], "padding_algorithm": "VALID"},
    {"ksize": [9, 9], "global_pooling": True, "paddings": [2, 2]},
    {"ksize": [3, 2], "adaptive": True},
    {"ksize": [9, 8], "adaptive": True},                          # more cells than input
    {"ksize": [1, 1], "adaptive": True, "global_pooling": True},  # identity grid
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("ptype", ["max", "avg"])
@pytest.mark.parametrize("exclusive", [True, False])
@pytest.mark.parametrize("case", range(len(KERNEL_CASES)))
def test_kernel_matches_reference(check, dtype, layout, ptype, exclusive, case):
    attrs = dict(KERNEL_CASES[case], pooling_type=ptype, exclusive=exclusive,
                 data_format=layout)
    rng = np.random.default_rng(case)
    shape = (2, 3, 7, 6) if layout == "NCHW" else (2, 7, 6, 3)
    check("pool2d", {"X": rng.standard_normal(shape).astype(dtype)}, attrs)


def test_kernel_avg_divisors(kernel):
    x = np.ones((1, 1, 3, 3))
    # A 2x2 window at stride 2 with padding 1: the corner window holds 1 real element.
    attrs = {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2], "paddings": [1, 1]}
    (ex,) = kernel("pool2d", attrs, "float64")(x)
    (inc,) = kernel("pool2d", dict(attrs, exclusive=False), "float64")(x)
    np.testing.assert_array_equal(ex, np.ones((1, 1, 2, 2)))
    np.testing.assert_array_equal(inc, np.full((1, 1, 2, 2), [[0.25, 0.5], [0.5, 1.0]]))


def test_kernel_padding_never_wins_a_max(kernel):
    x = -np.ones((1, 1, 2, 2))
    (out,) = kernel("pool2d", {"pooling_type": "max", "ksize": [2, 2], "strides": [1, 1],
                               "paddings": [1, 1]}, "float64")(x)
    np.testing.assert_array_equal(out, -np.ones((1, 1, 3, 3)))


@pytest.mark.parametrize("which", ["strided", "readonly"])
def test_kernel_strided_and_readonly(kernel, variants, which):
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6))
    attrs = {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}
    (want,) = kernel("pool2d", attrs, "float64")(x)
    (got,) = kernel("pool2d", attrs, "float64")(variants(x)[which])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("x, attrs, error", [
    (np.ones((2, 3, 4)), {}, ValueError),
    (np.ones((1, 1, 2, 2)), {"ksize": [3, 3]}, ValueError),
    (np.ones((1, 1, 2, 2), np.int32), {}, TypeError),
    (np.ones((1, 1, 2, 2), np.float16), {}, TypeError),
    (np.ones((1, 1, 2, 2)), {"paddings": [2 ** 30, 2 ** 30]}, ValueError),
])
def test_kernel_rejects_bad_inputs(kernel, x, attrs, error):
    attrs = dict({"pooling_type": "max", "ksize": [2, 2]}, **attrs)
    with pytest.raises(error, match="pool2d"):
        kernel("pool2d", attrs, "float64")(x)


def test_kernel_empty_batch(kernel):
    (out,) = kernel("pool2d", {"pooling_type": "max", "ksize": [2, 2]}, "float32")(
        np.zeros((0, 3, 4, 4), np.float32))
    assert out.shape == (0, 3, 3, 3)


# ---------------------------------------------------------------- gradient
from headrace.testing import check_grad  # noqa: E402

GRAD_CASES = [
    {"ksize": [2, 2], "strides": [2, 2]},
    {"ksize": [3, 2], "strides": [2, 1], "paddings": [1, 1]},
    {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 2, 0, 1], "ceil_mode": True},
    {"ksize": [2, 2], "strides": [2, 2], "ceil_mode": True},     # fast 2x2 path + tails
    {"ksize": [3, 3], "strides": [2, 2], "padding_algorithm": "SAME"},
    {"ksize": [9, 9], "global_pooling": True},
    {"ksize": [3, 2], "adaptive": True},
]


def _distinct(rng, shape):
    """Values 0.1 apart in random order: no max ties, nor any within a finite difference."""
    return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("ptype, exclusive", [("max", True), ("avg", True), ("avg", False)])
@pytest.mark.parametrize("case", range(len(GRAD_CASES)))
def test_gradient_matches_finite_differences(layout, ptype, exclusive, case):
    attrs = dict(GRAD_CASES[case], pooling_type=ptype, exclusive=exclusive, data_format=layout)
    shape = (2, 2, 7, 5) if layout == "NCHW" else (2, 7, 5, 2)
    check_grad("pool2d", {"X": _distinct(np.random.default_rng(case), shape)}, wrt=["X"],
               attrs=attrs)


def _grad_inputs(rng, shape, attrs, dtype, ties=False):
    from headrace_nn.reference.pool import pool2d as ref
    x = rng.standard_normal(shape)
    if ties:
        x = np.round(x)   # many equal values: the first maximum of a window takes it all
    x = x.astype(dtype)
    out = ref({"X": x}, attrs)["Out"]
    return {"X": x, "Out": out, "Out@GRAD": rng.standard_normal(out.shape).astype(dtype)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("ptype", ["max", "avg"])
@pytest.mark.parametrize("exclusive", [True, False])
@pytest.mark.parametrize("case", range(len(KERNEL_CASES)))
def test_grad_kernel_matches_reference(check, dtype, layout, ptype, exclusive, case):
    attrs = dict(KERNEL_CASES[case], pooling_type=ptype, exclusive=exclusive,
                 data_format=layout)
    shape = (2, 3, 7, 6) if layout == "NCHW" else (2, 7, 6, 3)
    inputs = _grad_inputs(np.random.default_rng(case), shape, attrs, dtype, ties=True)
    check("pool2d_grad", inputs, attrs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, ceil", [((64, 20, 24, 24), False), ((64, 50, 8, 8), False),
                                         ((3, 4, 9, 7), True), ((3, 4, 9, 7), False)])
def test_grad_kernel_max_2x2_stride_2(check, dtype, shape, ceil):
    # The LeNet pools (and odd sizes, whose ceil_mode tail windows are partial).
    attrs = {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2], "ceil_mode": ceil}
    for ties in (False, True):
        check("pool2d_grad", _grad_inputs(np.random.default_rng(1), shape, attrs, dtype, ties),
              attrs)


@pytest.mark.parametrize("strides", [[2, 2], [1, 1]])
def test_grad_max_ties_go_to_the_first_maximum(kernel, strides):
    x = np.array([[[[1.0, 3.0, 3.0], [3.0, 3.0, 0.0], [0.0, 0.0, 0.0]]]])
    attrs = {"pooling_type": "max", "ksize": [2, 2], "strides": strides}
    (out,) = kernel("pool2d", attrs, "float64")(x)
    (dx,) = kernel("pool2d_grad", attrs, "float64")(x, out, np.ones_like(out))
    if strides == [2, 2]:   # windows [[1,3],[3,3]] then (ceil off) nothing else
        want = [[0, 1, 0], [0, 0, 0], [0, 0, 0]]
    else:                   # four windows; the two upper ones share the 3 at (0, 1)
        want = [[0, 2, 0], [1, 1, 0], [0, 0, 0]]
    np.testing.assert_array_equal(dx[0, 0], want)


@pytest.mark.parametrize("x, out, dout, match", [
    (np.ones((1, 2, 4, 4)), np.ones((1, 2, 2, 3)), np.ones((1, 2, 2, 2)),
     r"Out\[1, 2, 2, 3\] must have the pooled shape \[1, 2, 2, 2\]"),
    (np.ones((1, 2, 4, 4)), np.ones((1, 2, 2, 2)), np.ones((1, 2, 2)),
     r"Out@GRAD\[1, 2, 2\] must have Out's shape"),
    (np.ones((1, 2, 4, 4)), np.ones((1, 2, 2, 2)), np.ones((1, 2, 2, 2), np.float32),
     r"Out@GRAD has dtype float32"),
    (np.ones((2, 4, 4)), np.ones((1, 2, 2, 2)), np.ones((1, 2, 2, 2)), r"must be 4-D"),
])
def test_grad_kernel_rejects_bad_inputs(kernel, x, out, dout, match):
    attrs = {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}
    with pytest.raises((ValueError, TypeError), match="pool2d_grad: .*" + match):
        kernel("pool2d_grad", attrs, "float64")(x, out, dout)


def test_grad_fast_2x2_path_routes_like_the_general_one_even_with_nans(kernel):
    # NCHW 2x2/stride-2 takes the unrolled path, NHWC the general loop: same comparisons.
    rng = np.random.default_rng(3)
    x = np.round(rng.standard_normal((2, 3, 6, 8)))
    x[rng.random(x.shape) < 0.15] = np.nan
    g = rng.standard_normal((2, 3, 3, 4))
    attrs = {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}
    (out,) = kernel("pool2d", attrs, "float64")(x)
    (fast,) = kernel("pool2d_grad", attrs, "float64")(x, out, g)
    nhwc = dict(attrs, data_format="NHWC")
    (general,) = kernel("pool2d_grad", nhwc, "float64")(
        x.transpose(0, 2, 3, 1), out.transpose(0, 2, 3, 1), g.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(fast, general.transpose(0, 3, 1, 2))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", [0, 1, 2, 8])   # 2x2/2 (NCHW's unrolled grad), padded, global
def test_max_pool_propagates_nan_wherever_it_is_in_the_window(check, layout, case):
    # A NaN in a window is its max (as NumPy's max), whatever its position: the running max
    # used to keep a NaN only when it came first. The gradient goes to the window's first NaN
    # (NumPy's argmax), in the unrolled 2x2 path and the general one alike.
    attrs = dict(KERNEL_CASES[case], pooling_type="max", data_format=layout)
    rng = np.random.default_rng(case)
    shape = (2, 3, 7, 6) if layout == "NCHW" else (2, 7, 6, 3)
    x = rng.standard_normal(shape)
    x[rng.random(shape) < 0.1] = np.nan
    x.flat[[5, 17, 40]] = np.nan   # some late in their windows, whatever the draw
    check("pool2d", {"X": x}, attrs)
    from headrace_nn.reference.pool import pool2d
    out = pool2d({"X": x}, attrs)["Out"]
    assert np.isnan(out).any() and not np.isnan(out).all()
    check("pool2d_grad", {"X": x, "Out": out, "Out@GRAD": rng.standard_normal(out.shape)},
          attrs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, attrs", [
    ((64, 20, 24, 24), {}), ((3, 4, 9, 7), {"ceil_mode": True}), ((3, 4, 9, 7), {}),
    ((2, 3, 3, 600), {}),                       # rows wider than the 256-window buffer
    ((2, 3, 8, 8), {"paddings": [0, 0, 0, 1]}),  # a right padding: the last column general
])
def test_max_2x2_stride_2_forward(check, kernel, dtype, shape, attrs):
    # NCHW 2x2/stride-2 max windows inside the plane take the two-step path, the rest (ceil
    # tails, padded borders) the general loop; NaNs anywhere in a window win in both.
    attrs = dict(attrs, pooling_type="max", ksize=[2, 2], strides=[2, 2])
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(dtype)
    x[rng.random(shape) < 0.05] = np.nan
    check("pool2d", {"X": x}, attrs)
    (fast,) = kernel("pool2d", attrs, dtype)(x)
    nhwc = dict(attrs, data_format="NHWC")
    (general,) = kernel("pool2d", nhwc, dtype)(np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    np.testing.assert_array_equal(fast, general.transpose(0, 3, 1, 2))


def test_forward_out_is_recycled_only_when_nothing_holds_it(kernel):
    k = kernel("pool2d", {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]})
    x = np.random.default_rng(6).standard_normal((2, 3, 8, 8)).astype("float32")
    (held,) = k(x)
    first = held.copy()
    (again,) = k(x + 1)
    assert again is not held
    np.testing.assert_array_equal(held, first)
    ptr = again.__array_interface__["data"][0]
    del again, held
    (third,) = k(x)
    assert third.__array_interface__["data"][0] == ptr
    np.testing.assert_array_equal(third, first)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("attrs", [
    {"global_pooling": True, "ksize": [1, 1]},                     # whole planes: one run
    {"ksize": [2, 9], "strides": [2, 3], "paddings": [0, 1]},     # rows of 8-9 values
    {"adaptive": True, "ksize": [2, 1]},                            # whole rows, 2 windows
])
def test_avg_sums_in_partial_sums(check, dtype, attrs):
    # Runs of 8+ values are summed in four partial sums: the reference's mean all the same.
    x = np.random.default_rng(7).standard_normal((2, 3, 5, 20)).astype(dtype) + 3.0
    check("pool2d", {"X": x}, dict(attrs, pooling_type="avg"))


# ---------------------------------------------------------------- whole-plane windows
# NCHW pooling whose one window is the whole plane (global pooling, ksize = H x W, adaptive
# 1x1) reduces each plane in _pool_planes.h; NHWC takes the general window loop: the two agree.
WHOLE = [{"ksize": [2, 2], "global_pooling": True}, {"ksize": "HW"},
         {"ksize": [1, 1], "adaptive": True}]
WHOLE_SHAPES = [(3, 5, 16, 16), (2, 3, 7, 5), (2, 3, 1, 1), (1, 2, 9, 13), (2, 2, 3, 200),
                (1, 3, 2, 3)]


def _whole_attrs(case, shape, **kw):
    attrs = dict(WHOLE[case], **kw)
    if attrs["ksize"] == "HW":
        attrs["ksize"] = list(shape[2:])
    return attrs


def _nhwc(kernel, op, attrs, dtype, *arrays):
    (got,) = kernel(op, dict(attrs, data_format="NHWC"), dtype)(
        *[np.ascontiguousarray(a.transpose(0, 2, 3, 1)) for a in arrays])
    return got.transpose(0, 3, 1, 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ptype, exclusive", [("max", True), ("avg", True), ("avg", False)])
@pytest.mark.parametrize("case", range(len(WHOLE)))
@pytest.mark.parametrize("shape", WHOLE_SHAPES)
def test_whole_plane_matches_reference_and_general_loop(check, kernel, dtype, ptype,
                                                        exclusive, case, shape):
    attrs = _whole_attrs(case, shape, pooling_type=ptype, exclusive=exclusive)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(dtype)
    if ptype == "max" and shape[2] * shape[3] > 1:
        x[rng.random(shape) < 0.02] = np.nan   # a NaN anywhere in a plane is its max
        x[0, 0].flat[-1] = np.nan              # in the scalar tail
    check("pool2d", {"X": x}, attrs)
    (fast,) = kernel("pool2d", attrs, dtype)(x)
    assert fast.shape == shape[:2] + (1, 1)
    general = _nhwc(kernel, "pool2d", attrs, dtype, x)
    if ptype == "max":
        np.testing.assert_array_equal(fast, general)
        np.testing.assert_array_equal(fast[..., 0, 0], np.max(x, axis=(2, 3)))
    else:
        tol = 2e-7 if dtype == "float32" else 1e-14
        np.testing.assert_allclose(fast, general, rtol=tol, atol=tol)
        want = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)
        np.testing.assert_allclose(fast, want, rtol=tol, atol=tol)
    g = rng.standard_normal(fast.shape).astype(dtype)
    check("pool2d_grad", {"X": x, "Out": fast, "Out@GRAD": g}, attrs)
    (dx,) = kernel("pool2d_grad", attrs, dtype)(x, fast, g)
    np.testing.assert_array_equal(dx, _nhwc(kernel, "pool2d_grad", attrs, dtype, x, fast, g))


def test_whole_plane_float32_mean_keeps_its_precision(kernel):
    # Values on a large offset: the float32 partial sums (8 values a lane) lose no more than
    # the general loop's double sum, rounded once.
    x = (1000 + np.random.default_rng(8).standard_normal((2, 3, 64, 64))).astype(np.float32)
    attrs = {"pooling_type": "avg", "ksize": [1, 1], "global_pooling": True}
    (got,) = kernel("pool2d", attrs, "float32")(x)
    want = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1.2e-7, atol=0)


@pytest.mark.parametrize("ptype", ["max", "avg"])
@pytest.mark.parametrize("case", range(len(WHOLE)))
@pytest.mark.parametrize("shape", [(2, 2, 7, 5), (1, 2, 3, 11)])
def test_whole_plane_gradient_matches_finite_differences(ptype, case, shape):
    attrs = _whole_attrs(case, shape, pooling_type=ptype)
    check_grad("pool2d", {"X": _distinct(np.random.default_rng(case), shape)}, wrt=["X"],
               attrs=attrs)


# ---------------------------------------------------------------- threads
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("ptype", ["max", "avg"])
@pytest.mark.parametrize("case", [0, 2, 7, 8])   # 2x2/2, padded ceil_mode, global, adaptive
def test_two_threads_give_one_threads_results(kernel, dtype, layout, ptype, case):
    # Above ELEMENT_GRAIN values a thread the planes (NCHW) or images (NHWC) are split between
    # the threads, forward and gradient, each output written by one thread in the serial
    # order: the same bits as one thread, and the reference's values. 5 images of 16 planes
    # (odd shares: 40 planes or 2.5 images a thread), ties in the max windows.
    import headrace as hr
    from headrace_nn.reference.pool import pool2d as ref
    attrs = dict(KERNEL_CASES[case], pooling_type=ptype, data_format=layout)
    shape = (5, 16, 36, 30) if layout == "NCHW" else (5, 36, 30, 16)
    inputs = _grad_inputs(np.random.default_rng(40 + case), shape, attrs, dtype, ties=True)
    x, g = inputs["X"], inputs["Out@GRAD"]
    got = {}
    before = hr.get_num_threads()
    try:
        for threads in (1, 2):
            hr.set_num_threads(threads)
            (out,) = kernel("pool2d", attrs, dtype)(x)
            (dx,) = kernel("pool2d_grad", attrs, dtype)(x, out, g)
            got[threads] = (out.copy(), dx.copy())
    finally:
        hr.set_num_threads(before)
    np.testing.assert_array_equal(got[2][0], got[1][0])
    np.testing.assert_array_equal(got[2][1], got[1][1])
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got[2][0], ref({"X": x}, attrs)["Out"], rtol=tol, atol=tol)
