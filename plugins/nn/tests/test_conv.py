"""conv2d: output-size formula against a sliding-window count, layouts, groups, errors; the CPU
kernel (im2col + GEMM) against the direct-loop reference."""
import itertools
import math

import numpy as np
import pytest

from headrace.errors import OpError, OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes, run_op


def windows(length, span, stride):
    """How many `span`-wide windows, `stride` apart, fit in `length` cells (counted, not solved)."""
    if length < span:
        return 0
    return np.lib.stride_tricks.sliding_window_view(np.zeros(length), span)[::stride].shape[0]


def conv(x, w, **attrs):
    inputs = {"Input": (x, attrs.pop("dtype", "float32")), "Filter": (w, "float32")}
    inputs.update(attrs.pop("extra", {}))
    return infer_shapes("conv2d", inputs, attrs=attrs)["Output"][0]


# Each grid point sets the H axis; W keeps a fixed, different setting so that a mix-up of the
# paddings' order (top, bottom, left, right) shows.
W_SIZE, W_K, W_PADS = 9, 3, (1, 2)
W_OUT = 10  # (9 + 1 + 2 - 3) // 1 + 1

GRID = list(itertools.product((5, 8, 13), (1, 3, 4), (1, 2, 3), ((0, 0), (1, 1), (2, 0), (0, 3)),
                              (1, 2)))


@pytest.mark.parametrize("size, k, stride, pads, dilation", GRID)
def test_output_size_matches_a_window_count(size, k, stride, pads, dilation):
    want = windows(size + pads[0] + pads[1], dilation * (k - 1) + 1, stride)
    attrs = dict(strides=[stride, 1], paddings=[pads[0], pads[1], *W_PADS],
                 dilations=[dilation, 1])
    x, w = [2, 3, size, W_SIZE], [4, 3, k, W_K]
    if want == 0:
        with pytest.raises(ShapeError, match=r"height .* smaller than the dilated filter"):
            conv(x, w, **attrs)
    else:
        assert conv(x, w, **attrs) == ((2, 4, want, W_OUT), "float32")


@pytest.mark.parametrize("size, k, stride, dilation", [
    (s, k, st, d) for s, k, st, _, d in GRID if _ == (0, 0)])
def test_same_and_valid_padding(size, k, stride, dilation):
    attrs = dict(strides=[stride, stride], dilations=[dilation, dilation], paddings=[5, 5])
    same = conv([1, 3, size, size], [4, 3, k, k], padding_algorithm="SAME", **attrs)
    # SAME: as many outputs as stride steps over the input; Paddle ignores dilation here.
    assert same[0] == (1, 4, math.ceil(size / stride), math.ceil(size / stride))
    want = windows(size, dilation * (k - 1) + 1, stride)
    if want:
        valid = conv([1, 3, size, size], [4, 3, k, k], padding_algorithm="VALID", **attrs)
        assert valid[0] == (1, 4, want, want)


@pytest.mark.parametrize("pads2, pads4", [([0, 0], [0, 0, 0, 0]), ([1, 2], [1, 1, 2, 2])])
def test_two_paddings_mean_both_sides(pads2, pads4):
    x, w = [1, 3, 10, 11], [4, 3, 3, 3]
    assert conv(x, w, paddings=pads2) == conv(x, w, paddings=pads4)


@pytest.mark.parametrize("x, data_format, want", [
    ([-1, 3, 32, 32], "NCHW", (-1, 8, 30, 30)),
    ([-1, 3, 32, 32], "AnyLayout", (-1, 8, 30, 30)),
    ([-1, 32, 32, 3], "NHWC", (-1, 30, 30, 8)),
    ([4, 3, -1, 32], "NCHW", (4, 8, -1, 30)),
    ([4, -1, 32, 32], "NCHW", (4, 8, 30, 30)),
    ([4, 32, -1, -1], "NHWC", (4, 30, -1, 8)),
])
def test_layouts_and_unknown_dims(x, data_format, want):
    assert conv(x, [8, 3, 3, 3], data_format=data_format) == (want, "float32")


@pytest.mark.parametrize("channels, filt, groups, want_m", [
    (6, [12, 3, 3, 3], 2, 12),      # two groups of 3 channels
    (6, [6, 1, 3, 3], 6, 6),        # depthwise
    (6, [12, 1, 3, 3], 6, 12),      # depthwise, multiplier 2
])
def test_groups(channels, filt, groups, want_m):
    assert conv([2, channels, 8, 8], filt, groups=groups)[0] == (2, want_m, 6, 6)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_output_dtype_and_lod_follow_input(dtype):
    prog, op = build_op("conv2d", {"Input": ([-1, 3, 8, 8], dtype, 1),
                                   "Filter": ([4, 3, 3, 3], dtype)})
    out = prog.global_block().var(op.output("Output")[0])
    assert (out.dtype, out.lod_level) == (dtype, 1)


def test_optional_bias_and_residual():
    extra = {"Bias": ([4], "float32"), "ResidualData": ([2, 4, 6, 6], "float32")}
    assert conv([2, 3, 8, 8], [4, 3, 3, 3], extra=extra) == ((2, 4, 6, 6), "float32")


@pytest.mark.parametrize("x, w, attrs, match", [
    ([2, 3, 8, 8], [4, 4, 3, 3], {},
     r"Input \(input_0\) has 3 channels but Filter \(filter_0\) expects 4 .*groups=1"),
    ([2, 6, 8, 8], [4, 2, 3, 3], {"groups": 2},
     r"has 6 channels but Filter \(filter_0\) expects 4 .*groups=2"),
    ([2, 8, 8, 3], [4, 4, 3, 3], {"data_format": "NHWC"}, r"has 3 channels"),
    ([2, 6, 8, 8], [5, 2, 3, 3], {"groups": 3}, r"5 output channels, not divisible by groups=3"),
    ([2, 3, 8], [4, 3, 3, 3], {}, r"input 'Input' \(input_0\) has the wrong rank"),
    ([2, 3, 8, 8], [4, 3, 3], {}, r"input 'Filter' \(filter_0\) has the wrong rank"),
    ([2, 3, 2, 8], [4, 3, 3, 3], {}, r"height \(2\) is smaller than the dilated filter"),
    ([2, 3, 8, 4], [4, 3, 3, 3], {"dilations": [1, 2]},
     r"width \(4\) is smaller than the dilated filter \(5\)"),
])
def test_shape_errors(x, w, attrs, match):
    with pytest.raises(ShapeError, match=match):
        conv(x, w, **attrs)


@pytest.mark.parametrize("extra, match", [
    ({"Bias": ([3], "float32")}, r"Bias \(bias_0\) must hold one value per output channel"),
    ({"ResidualData": ([2, 4, 8, 8], "float32")},
     r"ResidualData \(residualdata_0\) must have the shape of Output"),
])
def test_optional_input_errors(extra, match):
    with pytest.raises(ShapeError, match=match):
        conv([2, 3, 8, 8], [4, 3, 3, 3], extra=extra)


def test_filter_dtype_must_match_input():
    with pytest.raises(ShapeError, match=r"Filter \(filter_0\) must have the dtype of Input"):
        infer_shapes("conv2d", {"Input": ([1, 3, 8, 8], "float64"),
                                "Filter": ([4, 3, 3, 3], "float32")})


@pytest.mark.parametrize("attrs, match", [
    ({"strides": [1, 1, 1]}, r"'strides' must hold 2 values"),
    ({"strides": [0, 1]}, r"'strides' values must be >= 1"),
    ({"paddings": [1, 1, 1]}, r"'paddings' must hold 2 or 4 values"),
    ({"paddings": [-1, 0]}, r"'paddings' values must be >= 0"),
    ({"dilations": [0, 1]}, r"'dilations' values must be >= 1"),
    ({"groups": 0}, r"'groups' must be >= 1"),
    ({"data_format": "CHWN"}, r"'data_format' must be one of"),
    ({"padding_algorithm": "FULL"}, r"'padding_algorithm' must be one of"),
])
def test_attribute_errors(attrs, match):
    with pytest.raises(OpValidationError, match=match):
        conv([1, 3, 8, 8], [4, 3, 3, 3], **attrs)


def test_integer_input_is_rejected():
    with pytest.raises(OpValidationError, match=r"input 'Input' \(input_0\) has an unsupported"):
        conv([1, 3, 8, 8], [4, 3, 3, 3], dtype="int32")


# ---------------------------------------------------------------- kernel
# float32 sums of a few hundred products reorder under BLAS: relative 1e-5 is too tight for
# outputs near 0, so float32 gets an absolute tolerance scaled to the output's magnitude.
TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": {}}

CASES = [
    # (C, M, H, W, k, attrs)
    (3, 4, 7, 6, (3, 3), {}),
    (3, 4, 7, 6, (3, 2), {"strides": [2, 1], "paddings": [1, 2]}),
    (4, 6, 9, 8, (3, 3), {"strides": [1, 2], "paddings": [1, 0, 2, 1], "dilations": [2, 1],
                          "groups": 2}),
    (6, 6, 5, 5, (1, 1), {"groups": 3}),                       # 1x1: no im2col (NHWC)
    (4, 8, 6, 6, (1, 1), {"strides": [2, 2], "groups": 2}),    # 1x1 with stride
    (3, 5, 8, 7, (3, 3), {"strides": [2, 2], "padding_algorithm": "SAME",
                          "dilations": [3, 3]}),               # SAME ignores dilation
    (3, 5, 8, 7, (2, 3), {"strides": [3, 2], "paddings": [4, 4], "dilations": [2, 2],
                          "padding_algorithm": "VALID"}),
    (6, 6, 6, 6, (2, 2), {"paddings": [3, 3], "groups": 6}),  # depthwise, padding > kernel
    (2, 3, 4, 4, (4, 4), {}),                                 # kernel = image: 1x1 output
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_kernel_matches_reference(check, dtype, layout, case):
    c, m, h, w, k, attrs = CASES[case]
    rng = np.random.default_rng(case)
    shape = (3, c, h, w) if layout == "NCHW" else (3, h, w, c)
    x = rng.standard_normal(shape).astype(dtype)
    filt = rng.standard_normal((m, c // attrs.get("groups", 1)) + k).astype(dtype)
    check("conv2d", {"Input": x, "Filter": filt}, dict(attrs, data_format=layout), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("bias, residual", [(True, False), (False, True), (True, True)])
def test_kernel_bias_and_residual(check, dtype, layout, bias, residual):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 6, 5) if layout == "NCHW" else (2, 6, 5, 4)).astype(dtype)
    inputs = {"Input": x, "Filter": rng.standard_normal((6, 2, 3, 3)).astype(dtype)}
    attrs = {"groups": 2, "paddings": [1, 1], "data_format": layout}
    if bias:
        inputs["Bias"] = rng.standard_normal(6).astype(dtype)
    if residual:
        out_shape = (2, 6, 6, 5) if layout == "NCHW" else (2, 6, 5, 6)
        inputs["ResidualData"] = rng.standard_normal(out_shape).astype(dtype)
    check("conv2d", inputs, attrs, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_kernel_many_images_span_several_chunks(check, dtype, layout):
    # The LeNet-2 layer of the benchmark: 64 images are processed in chunks of a few images.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 20, 12, 12)).astype(dtype)
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    w = (rng.standard_normal((50, 20, 5, 5)) * 0.1).astype(dtype)
    check("conv2d", {"Input": x, "Filter": w}, {"data_format": layout}, **TOL[dtype])


# float32 NCHW images of 512+ output positions P run on the packed GEMM, whose panels im2col
# writes directly: output rows straddling 32-column panels (P % 32 != 0), strides, paddings,
# groups, dilation, and Bias / ResidualData accumulated into the GEMM's result.
PACKED = [
    (16, 16, 23, 23, (3, 3), {"paddings": [1, 1], "groups": 2}),              # P = 529
    (8, 16, 49, 49, (3, 3), {"strides": [2, 2], "paddings": [1, 1]}),         # P = 625
    (8, 32, 33, 45, (3, 3), {"strides": [1, 2], "paddings": [2, 0, 1, 2],
                             "dilations": [2, 1]}),                            # P = 713
]


@pytest.mark.parametrize("extra", ["", "bias", "residual"])
@pytest.mark.parametrize("case", range(len(PACKED)))
def test_kernel_packed_im2col(check, case, extra):
    from headrace_nn.reference.conv import conv2d as ref
    c, m, h, w, k, attrs = PACKED[case]
    rng = np.random.default_rng(20 + case)
    inputs = {"Input": rng.standard_normal((3, c, h, w)).astype("float32"),
              "Filter": rng.standard_normal((m, c // attrs.get("groups", 1)) + k
                                            ).astype("float32")}
    out_shape = ref(dict(inputs), attrs)["Output"].shape
    if extra == "bias":
        inputs["Bias"] = rng.standard_normal(m).astype("float32")
    elif extra == "residual":
        inputs["ResidualData"] = rng.standard_normal(out_shape).astype("float32")
    check("conv2d", inputs, attrs, **TOL["float32"])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_chunks_with_a_one_image_tail(check, dtype):
    # LeNet-2: chunks of 8 (float32) or 4 (float64) images, the 17th alone (its GEMM writes
    # into Output, onto ResidualData, where the others go through the chunk's buffer).
    rng = np.random.default_rng(9)
    x = rng.standard_normal((17, 20, 12, 12)).astype(dtype)
    w = (rng.standard_normal((50, 20, 5, 5)) * 0.1).astype(dtype)
    r = rng.standard_normal((17, 50, 8, 8)).astype(dtype)
    check("conv2d", {"Input": x, "Filter": w, "ResidualData": r}, {}, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [5, 16], ids=["blas", "packed"])
def test_kernel_1x1_nchw_needs_no_im2col(check, dtype, size):
    # NCHW 1x1 / stride 1 / no padding: each image's planes are the GEMM operand (groups,
    # Bias and ResidualData onto it); at 16x16 the float32 product is on the packed GEMM.
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 32, size, size)).astype(dtype)
    inputs = {"Input": x, "Filter": rng.standard_normal((48, 16, 1, 1)).astype(dtype),
              "Bias": rng.standard_normal(48).astype(dtype),
              "ResidualData": rng.standard_normal((3, 48, size, size)).astype(dtype)}
    check("conv2d", inputs, {"groups": 2}, **TOL[dtype])
    dy = rng.standard_normal((3, 48, size, size)).astype(dtype)
    check("conv2d_grad", {"Input": x, "Filter": inputs["Filter"], "Output@GRAD": dy},
          {"groups": 2}, **TOL[dtype])



def test_kernel_any_layout_is_nchw(kernel):
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((4, 3, 3, 3))
    (a,) = kernel("conv2d", {"data_format": "AnyLayout"}, "float64")(x, w)
    (b,) = kernel("conv2d", {"data_format": "NCHW"}, "float64")(x, w)
    np.testing.assert_array_equal(a, b)


def test_kernel_empty_batch_and_empty_channels(kernel):
    (out,) = kernel("conv2d", {}, "float64")(np.zeros((0, 3, 5, 5)), np.ones((4, 3, 3, 3)))
    assert out.shape == (0, 4, 3, 3)
    (out,) = kernel("conv2d", {}, "float64")(np.ones((2, 0, 5, 5)), np.ones((4, 0, 3, 3)),
                                             np.arange(4.0))
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(4.0).reshape(1, 4, 1, 1),
                                                       (2, 4, 3, 3)))


@pytest.mark.parametrize("which", ["strided", "readonly"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_kernel_strided_and_readonly_inputs(kernel, variants, which, layout):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 6, 5) if layout == "NCHW" else (2, 6, 5, 4))
    w, b = rng.standard_normal((4, 2, 3, 3)), rng.standard_normal(4)
    attrs = {"groups": 2, "data_format": layout}
    (want,) = kernel("conv2d", attrs, "float64")(x, w, b)
    (got,) = kernel("conv2d", attrs, "float64")(variants(x)[which], variants(w)[which],
                                                variants(b)[which])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("x, w, extra, attrs, error, match", [
    ((2, 3, 5, 5), (4, 2, 3, 3), {}, {}, ValueError, "3 channels"),
    ((2, 4, 5, 5), (3, 2, 3, 3), {}, {"groups": 2}, ValueError, "not divisible"),
    ((2, 3, 2, 2), (4, 3, 3, 3), {}, {}, ValueError, "smaller than the dilated"),
    ((2, 3, 5, 5), (4, 3, 3, 3), {}, {"dilations": [3, 1]}, ValueError, "smaller"),
    ((3, 5, 5), (4, 3, 3, 3), {}, {}, ValueError, "4-D"),
    ((2, 3, 5, 5), (4, 3, 3), {}, {}, ValueError, "4-D"),
    ((2, 3, 5, 5), (4, 3, 3, 3), {"Bias": (5,)}, {}, ValueError, "Bias"),
    ((2, 3, 5, 5), (4, 3, 3, 3), {"ResidualData": (2, 4, 3, 4)}, {}, ValueError, "Residual"),
    ((1, 3, 5, 5), (4, 3, 3, 3), {}, {"paddings": [2 ** 30, 2 ** 30]}, ValueError, "int range"),
])
def test_kernel_rejects_bad_shapes(kernel, x, w, extra, attrs, error, match):
    args = [np.ones(x), np.ones(w), None, None]
    if "Bias" in extra:
        args[2] = np.ones(extra["Bias"])
    if "ResidualData" in extra:
        args[3] = np.ones(extra["ResidualData"])
    with pytest.raises(error, match=match):
        kernel("conv2d", attrs, "float64")(*args)


@pytest.mark.parametrize("x, w", [
    (np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 1, 1), np.float64)),
    (np.ones((1, 1, 3, 3), np.int64), np.ones((1, 1, 1, 1), np.int64)),
    (np.ones((1, 1, 3, 3), np.float16), np.ones((1, 1, 1, 1), np.float16)),
])
def test_kernel_rejects_bad_dtypes(kernel, x, w):
    with pytest.raises(TypeError, match="conv2d"):
        kernel("conv2d")(x, w)


def test_a_bad_shape_at_run_time_is_an_op_error():
    with pytest.raises(OpError):
        run_op("conv2d", {"Input": np.ones((1, 3, 2, 2), np.float32),
                          "Filter": np.ones((1, 3, 3, 3), np.float32)})


# ---------------------------------------------------------------- gradient
from headrace.runtime.kernel_info import KernelInfo, SlotVar  # noqa: E402

from headrace.testing import check_grad  # noqa: E402

GRAD_ATTRS = {"strides": [2, 1], "paddings": [1, 2, 0, 1], "dilations": [2, 1], "groups": 2}


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("attrs", [
    GRAD_ATTRS,
    {"strides": [1, 2], "paddings": [1, 1], "dilations": [1, 2]},
    {"strides": [2, 2], "padding_algorithm": "SAME"},
], ids=["s2-pad-dil2-groups2", "pad-dil2", "same"])
def test_gradient_matches_finite_differences(layout, attrs):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 7, 6) if layout == "NCHW" else (2, 7, 6, 4))
    groups = attrs.get("groups", 1)
    w = rng.standard_normal((6, 4 // groups, 3, 2))
    check_grad("conv2d", {"Input": x, "Filter": w}, wrt=["Input", "Filter"],
               attrs=dict(attrs, data_format=layout))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_gradient_of_bias_and_residual(layout):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 2, 4, 5) if layout == "NCHW" else (2, 4, 5, 2))
    w, b = rng.standard_normal((3, 2, 2, 2)), rng.standard_normal(3)
    r = rng.standard_normal((2, 3, 3, 4) if layout == "NCHW" else (2, 3, 4, 3))
    check_grad("conv2d", {"Input": x, "Filter": w, "Bias": b, "ResidualData": r},
               wrt=["Input", "Filter", "Bias", "ResidualData"], attrs={"data_format": layout})


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_gradient_of_a_1x1_filter(layout):
    # 1x1 / stride 1 / no padding: no im2col / im2row, the images are the GEMM operand.
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 4, 3, 3) if layout == "NCHW" else (2, 3, 3, 4))
    check_grad("conv2d", {"Input": x, "Filter": rng.standard_normal((4, 2, 1, 1))},
               wrt=["Input", "Filter"], attrs={"groups": 2, "data_format": layout})


def _grad_inputs(rng, case, layout, dtype, n=3):
    c, m, h, w, k, attrs = CASES[case]
    shape = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
    inputs = {"Input": rng.standard_normal(shape).astype(dtype),
              "Filter": rng.standard_normal((m, c // attrs.get("groups", 1)) + k).astype(dtype)}
    attrs = dict(attrs, data_format=layout)
    from headrace_nn.reference.conv import conv2d as ref
    out = ref(inputs, attrs)["Output"]
    inputs["Output@GRAD"] = rng.standard_normal(out.shape).astype(dtype)
    return inputs, attrs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_grad_kernel_matches_reference(check, dtype, layout, case):
    inputs, attrs = _grad_inputs(np.random.default_rng(case), case, layout, dtype)
    check("conv2d_grad", inputs, attrs, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("shape", [(64, 1, 28, 28, 20), (64, 20, 12, 12, 50)],
                         ids=["lenet1", "lenet2"])
def test_grad_kernel_lenet_layers_span_several_chunks(check, dtype, layout, shape):
    n, c, h, w, m = shape
    rng = np.random.default_rng(14)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    dy = rng.standard_normal((n, m, h - 4, w - 4)).astype(dtype)
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        dy = np.ascontiguousarray(dy.transpose(0, 2, 3, 1))
    filt = (rng.standard_normal((m, c, 5, 5)) * 0.1).astype(dtype)
    check("conv2d_grad", {"Input": x, "Filter": filt, "Output@GRAD": dy},
          {"data_format": layout}, rtol=1e-3 if dtype == "float32" else None,
          atol=1e-3 if dtype == "float32" else None)


def _info(*bound):
    """A KernelInfo whose op binds only the given output slots."""
    return KernelInfo("conv2d_grad", {}, outputs={s: (SlotVar(s.lower()),) for s in bound})


@pytest.mark.parametrize("bound", [("Input@GRAD",), ("Filter@GRAD",), ("Bias@GRAD",),
                                   ("Filter@GRAD", "ResidualData@GRAD")])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_grad_kernel_computes_only_bound_gradients(kernel, bound, layout):
    inputs, attrs = _grad_inputs(np.random.default_rng(15), 2, layout, "float64")
    args = (inputs["Input"], inputs["Filter"], inputs["Output@GRAD"])
    full = kernel("conv2d_grad", attrs, "float64")(*args)
    part = kernel("conv2d_grad", attrs, "float64", _info(*bound))(*args)
    slots = ("Input@GRAD", "Filter@GRAD", "Bias@GRAD", "ResidualData@GRAD")
    for slot, a, b in zip(slots, full, part):
        if slot in bound:
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
        else:
            assert b is None, slot


@pytest.mark.parametrize("which", ["strided", "readonly"])
def test_grad_kernel_strided_and_readonly_inputs(kernel, variants, which):
    inputs, attrs = _grad_inputs(np.random.default_rng(16), 2, "NCHW", "float64")
    args = [inputs["Input"], inputs["Filter"], inputs["Output@GRAD"]]
    want = kernel("conv2d_grad", attrs, "float64")(*args)
    got = kernel("conv2d_grad", attrs, "float64")(*[variants(a)[which] for a in args])
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("x, w, dy, match", [
    (np.ones((2, 3, 5, 5)), np.ones((4, 3, 3, 3)), np.ones((2, 4, 3, 4)),
     r"Output@GRAD\[2, 4, 3, 4\] must have Output's shape \[2, 4, 3, 3\]"),
    (np.ones((2, 3, 5, 5)), np.ones((4, 3, 3, 3)), np.ones((2, 4, 3, 3), np.float32),
     r"must have one dtype"),
    (np.ones((2, 3, 5, 5)), np.ones((4, 2, 3, 3)), np.ones((2, 4, 3, 3)), r"3 channels"),
])
def test_grad_kernel_rejects_bad_inputs(kernel, x, w, dy, match):
    with pytest.raises((ValueError, TypeError), match="conv2d_grad: .*" + match):
        kernel("conv2d_grad", {}, "float64")(x, w, dy)


def test_grad_kernel_empty_batch(kernel):
    dx, dw, db, _ = kernel("conv2d_grad", {}, "float64")(
        np.zeros((0, 3, 5, 5)), np.ones((4, 3, 3, 3)), np.zeros((0, 4, 3, 3)))
    assert dx.shape == (0, 3, 5, 5) and (dw == 0).all() and dw.shape == (4, 3, 3, 3)
    assert (db == 0).all()
