"""conv2d's float32 NCHW kernels without a col matrix (kernels/cpu/_conv_direct.h): forward,
filter gradient and stride-1 input gradient, against the float64 NumPy reference, against the
im2col + GEMM path (conv.DIRECT off), and through the adjoint identities
<conv(X), dY> = <X, Input@GRAD> = <W, Filter@GRAD> (exact for a linear op: a finite-difference
check without the step's error). Each case asserts which paths it reaches."""
import numpy as np
import pytest

from headrace_nn.kernels.cpu import conv
from headrace_nn.reference.conv import conv2d as ref_conv
from headrace_nn.reference.conv import conv2d_grad as ref_grad

pytestmark = pytest.mark.skipif(not conv.DIRECT_OK, reason="needs AVX-512 (else the "
                                "kernels stay on im2col + GEMM, which test_conv.py covers)")

# (N, C, M, H, W, kh, kw, attrs, paths (forward, filter grad, input grad))
CASES = [
    # the small ResNet's layers: 32-wide rows (2 vectors), 16-wide rows (the 8-filter tiles'
    # tails of 1 and 2 vectors: 16 and 8 vectors an image), stride 2, 3 input channels
    (2, 16, 16, 32, 32, 3, 3, {"paddings": [1, 1]}, (True, True, True)),
    (3, 32, 32, 16, 16, 3, 3, {"paddings": [1, 1]}, (True, True, True)),
    (2, 16, 32, 32, 32, 3, 3, {"strides": [2, 2], "paddings": [1, 1]}, (True, True, False)),
    (2, 3, 16, 32, 32, 3, 3, {"paddings": [1, 1]}, (True, True, False)),
    (1, 8, 16, 8, 16, 3, 3, {"paddings": [1, 1]}, (True, True, True)),
    # odd sizes: 13- and 40-wide rows (masked lanes, 3 vectors a row), filters 13 and 14
    # (8 + 4 + 1, 8 + 4 + 2 tiles), taps not a multiple of 6, asymmetric paddings
    (2, 5, 13, 11, 13, 3, 3, {"paddings": [0, 2, 1, 1]}, (True, True, True)),
    (2, 4, 14, 7, 40, 3, 2, {"paddings": [2, 1]}, (True, True, True)),
    # 15 filters (8 + 4 + 2 + 1) over 32-wide rows: every tile's vectors full (loaded
    # without masks) but the image's last group of 4 (the 4/2/1-filter tiles' masked loads)
    (2, 4, 15, 8, 32, 3, 3, {"paddings": [1, 1]}, (True, True, True)),
    # LeNet-1: 5x5 over one channel (24-wide rows)
    (3, 1, 20, 28, 28, 5, 5, {}, (True, True, False)),
    # dilation, stride 2 with dilation, groups, a padding wider than the filter (the input
    # gradient's paddings go negative)
    (2, 6, 8, 20, 24, 3, 3, {"paddings": [2, 2], "dilations": [2, 2]}, (True, True, True)),
    (2, 4, 6, 30, 33, 3, 3, {"strides": [2, 1], "paddings": [1, 1], "dilations": [1, 2]},
     (True, True, False)),
    (2, 8, 12, 14, 14, 3, 3, {"paddings": [1, 1], "groups": 2}, (True, True, True)),
    # column strides 2 (odd width: the even/odd split's last vector partial) and 3 (the
    # plain phase split)
    (2, 3, 8, 17, 61, 3, 3, {"strides": [2, 2], "paddings": [1, 1]}, (True, True, False)),
    (1, 4, 8, 9, 142, 3, 3, {"strides": [1, 3], "paddings": [1, 1]}, (True, True, False)),
    (2, 4, 4, 10, 24, 2, 2, {"paddings": [3, 3]}, (True, True, True)),
    # a strided 1x1 filter (a shortcut's projection): the forward only; a 1x1 filter of
    # stride 1 with a padding, odd sizes; not taken: 8-wide rows (LeNet-2), NHWC
    (2, 16, 32, 32, 32, 1, 1, {"strides": [2, 2]}, (True, False, False)),
    (3, 5, 11, 13, 35, 1, 1, {"strides": [2, 3], "paddings": [1, 2]}, (True, False, False)),
    # ... of column stride 2 and no padding, read without the padded copy (hr_cd_conv_s2t):
    # odd widths (the second load's lanes cut at the row's end), 13 / 6 / 9 filters (8-, 4-
    # and 1-filter tiles), 8 / 3 / 4 / 1 vectors an image (tiles of 3, 2 and 1), row strides
    # 1-3, one and 37 images
    (3, 5, 13, 7, 61, 1, 1, {"strides": [2, 2]}, (True, False, False)),
    (2, 3, 6, 9, 25, 1, 1, {"strides": [3, 2]}, (True, False, False)),
    (1, 7, 9, 4, 32, 1, 1, {"strides": [1, 2]}, (True, False, False)),
    (2, 4, 8, 1, 31, 1, 1, {"strides": [2, 2]}, (True, False, False)),
    (37, 8, 16, 6, 32, 1, 1, {"strides": [2, 2]}, (True, False, False)),
    # column stride 2 with taps, read in place (_conv_s2.h): 3 vectors a row (the last of 8
    # lanes), 21 filters (16-filter tiles, then 4 and 1), batch 1; asymmetric paddings, 13
    # filters (8-, 4- and 1-filter tiles of 3 vectors); dilation with a padding wider than the
    # filter (whole tap rows outside the image); row stride 1 with groups; a 1x3 filter
    (1, 5, 21, 9, 80, 3, 3, {"strides": [2, 2], "paddings": [1, 1]}, (True, True, False)),
    (3, 6, 13, 11, 26, 3, 3, {"strides": [2, 2], "paddings": [0, 2, 1, 1]},
     (True, True, False)),
    (2, 4, 6, 20, 48, 3, 3, {"strides": [2, 2], "paddings": [3, 3], "dilations": [2, 2]},
     (True, True, False)),
    (2, 8, 16, 10, 32, 3, 3, {"strides": [1, 2], "paddings": [1, 1], "groups": 2},
     (True, True, False)),
    (2, 3, 8, 9, 62, 1, 3, {"strides": [2, 2], "paddings": [0, 1]}, (True, True, False)),
    (2, 8, 16, 17, 33, 1, 1, {"paddings": [1, 1]}, (False, False, False)),
    (2, 20, 50, 12, 12, 5, 5, {}, (False, False, False)),
]


@pytest.fixture(autouse=True)
def _direct_forward():
    """The direct forward kernels, not Winograd (test_conv_wino.py's), for the 3x3 stride-1
    convs both take."""
    conv.WINOGRAD = False
    yield
    conv.WINOGRAD = True


def _inputs(case, rng):
    n, c, m, h, w, kh, kw, attrs, _ = case
    x = rng.standard_normal((n, c, h, w)).astype("float32")
    filt = rng.standard_normal((m, c // attrs.get("groups", 1), kh, kw)).astype("float32")
    return x, filt


def _both(fn):
    """``fn()`` with the direct kernels and on im2col + GEMM."""
    try:
        conv.DIRECT = True
        direct = fn()
        conv.DIRECT = False
        gemm = fn()
    finally:
        conv.DIRECT = True
    return direct, gemm


@pytest.mark.parametrize("case", range(len(CASES)))
def test_paths_are_the_ones_meant(case):
    n, c, m, h, w, kh, kw, attrs, paths = CASES[case]
    groups = attrs.get("groups", 1)
    assert conv.direct_paths(dict(attrs), (n, c, h, w), (m, c // groups, kh, kw)) == paths
    if any(paths):
        assert conv.direct_paths(dict(attrs, data_format="NHWC"), (n, h, w, c),
                                 (m, c // groups, kh, kw)) == (False, False, False)


@pytest.mark.parametrize("relu", [False, True], ids=["", "relu"])
@pytest.mark.parametrize("extra", ["", "bias", "residual", "both"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_forward_matches_reference(kernel, fused_conv_case, case, extra, relu):
    # Bias and relu (fused_conv2d_add_act's) go into the direct kernel's store; on im2col +
    # GEMM Bias prefills Output and relu is a pass of its own.
    rng = np.random.default_rng(100 + case)
    x, filt = _inputs(CASES[case], rng)
    attrs = CASES[case][7]
    args, want = fused_conv_case(x, filt, attrs, extra, relu, rng)
    run = kernel("conv2d", attrs)
    got, gemm = _both(lambda: run(*args, relu=relu)[0])
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * scale * np.sqrt(filt[0].size))
    np.testing.assert_allclose(got, gemm, rtol=0, atol=2e-6 * scale * np.sqrt(filt[0].size))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_gradients_match_reference_and_adjoint(kernel, case):
    rng = np.random.default_rng(200 + case)
    x, filt = _inputs(CASES[case], rng)
    attrs = CASES[case][7]
    y = ref_conv({"Input": x.astype("float64"), "Filter": filt.astype("float64")},
                 attrs)["Output"]
    dy = rng.standard_normal(y.shape).astype("float32")
    want = ref_grad({"Input": x.astype("float64"), "Filter": filt.astype("float64"),
                     "Output@GRAD": dy.astype("float64")}, attrs)
    run = kernel("conv2d_grad", attrs)
    (dx, dw, _, _), (gx, gw, _, _) = _both(lambda: run(x, filt, dy))
    for got, gemm, slot in ((dx, gx, "Input@GRAD"), (dw, gw, "Filter@GRAD")):
        exp = want[slot]
        tol = 2e-6 * np.abs(exp).max() * np.sqrt(dy.size / dy.shape[0])
        np.testing.assert_allclose(got, exp, rtol=0, atol=tol, err_msg=slot)
        np.testing.assert_allclose(got, gemm, rtol=0, atol=tol, err_msg=slot)
    # <conv(X), dY> = <X, dX> = <W, dW>: the gradients are the op's adjoints.
    inner = float(np.vdot(y, dy.astype("float64")))
    bound = 1e-5 * float(np.abs(y).sum() * np.abs(dy).max())
    assert abs(float(np.vdot(x.astype("float64"), dx.astype("float64"))) - inner) <= bound
    assert abs(float(np.vdot(filt.astype("float64"), dw.astype("float64"))) - inner) <= bound


def test_many_images_and_an_odd_batch(kernel):
    # The filter gradient sums every image's lanes once at the end: 37 images of LeNet-1.
    rng = np.random.default_rng(300)
    x = rng.standard_normal((37, 1, 28, 28)).astype("float32")
    filt = rng.standard_normal((20, 1, 5, 5)).astype("float32")
    dy = rng.standard_normal((37, 20, 24, 24)).astype("float32")
    want = ref_grad({"Input": x.astype("float64"), "Filter": filt.astype("float64"),
                     "Output@GRAD": dy.astype("float64")}, {})["Filter@GRAD"]
    got = kernel("conv2d_grad", {})(x, filt, dy)[1]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_relu_passes_nan(kernel):
    # relu as the relu op: 0 where the sum is < 0, a NaN comes out NaN (max(0, NaN) would
    # drop it in the other operand order).
    x = np.ones((1, 4, 16, 16), "float32")
    x[0, 0, 5, 5] = np.nan
    filt = np.ones((8, 4, 3, 3), "float32")
    bias = np.zeros(8, "float32")
    bias[1] = -100.0
    run = kernel("conv2d", {"paddings": [1, 1]})
    assert conv.direct_paths({"paddings": [1, 1]}, x.shape, filt.shape)[0]
    for out in _both(lambda: run(x, filt, bias, relu=True)[0]):
        for m in range(8):
            nan = np.isnan(out[0, m])
            assert nan[4:7, 4:7].all() and nan.sum() == 9
        assert (out[0, 1][~nan] == 0).all()
        assert (out[0, 0][~nan] > 0).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_scratch_reused_across_calls_and_threads(kernel, threads):
    # The padded image and the filter gradient's partial sums are per-thread buffers kept
    # between calls: a large conv, a small one, the large one again (buffers grown, then
    # reused with stale contents) give the results of the first calls, on 1 or 2 threads.
    import headrace as hr
    rng = np.random.default_rng(400)
    cases = [(4, 16, 32, 32, 32, {"paddings": [1, 1]}), (2, 3, 8, 9, 17, {})]
    data = []
    for n, c, m, h, w, attrs in cases:
        x = rng.standard_normal((n, c, h, w)).astype("float32")
        filt = rng.standard_normal((m, c, 3, 3)).astype("float32")
        assert all(conv.direct_paths(dict(attrs), x.shape, filt.shape)[:2])
        (y,) = kernel("conv2d", attrs)(x, filt)
        dy = rng.standard_normal(y.shape).astype("float32")
        data.append((attrs, x, filt, dy, y.copy(), kernel("conv2d_grad", attrs)(x, filt, dy)[1]))
    before = hr.get_num_threads()
    hr.set_num_threads(threads)
    try:
        for attrs, x, filt, dy, y, dw in data + data[::-1] + data:
            (got,) = kernel("conv2d", attrs)(x, filt)
            np.testing.assert_allclose(got, y, rtol=0, atol=1e-5 * np.abs(y).max())
            got = kernel("conv2d_grad", attrs)(x, filt, dy)[1]
            np.testing.assert_allclose(got, dw, rtol=0, atol=1e-5 * np.abs(dw).max())
    finally:
        hr.set_num_threads(before)


S2_CASES = [c for c in CASES if c[7].get("strides", [1, 1])[1] == 2]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", range(len(S2_CASES)))
def test_stride2_in_place_matches_padded_copy(kernel, fused_conv_case, case, threads):
    # The in-place stride-2 tiles (shuffled lanes put back in order at the store) against the
    # padded phase-split copy's tiles, with Bias, ResidualData and relu, on 1 and 2 threads
    # (images split between them), and against the float64 reference.
    import headrace as hr
    rng = np.random.default_rng(500 + case)
    x, filt = _inputs(S2_CASES[case], rng)
    attrs = S2_CASES[case][7]
    args, want = fused_conv_case(x, filt, attrs, "both", True, rng)
    run = kernel("conv2d", attrs)
    before = hr.get_num_threads()
    hr.set_num_threads(threads)
    try:
        got = run(*args, relu=True)[0]
        conv.s2_in_place(False)
        padded = run(*args, relu=True)[0]
    finally:
        conv.s2_in_place(True)
        hr.set_num_threads(before)
    tol = 2e-6 * np.abs(want).max() * np.sqrt(filt[0].size)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    np.testing.assert_allclose(got, padded, rtol=0, atol=tol)


@pytest.mark.parametrize("n", [1, 64])
def test_stride2_resnet_layer_batches(kernel, fused_conv_case, n):
    # The small ResNet's downsampling conv (16 -> 32 channels, 32x32 -> 16x16) at batch 1 and
    # 64: each image's tiles prefetch the next image's rows and outputs.
    rng = np.random.default_rng(600 + n)
    x = rng.standard_normal((n, 16, 32, 32)).astype("float32")
    filt = rng.standard_normal((32, 16, 3, 3)).astype("float32")
    attrs = {"strides": [2, 2], "paddings": [1, 1]}
    assert conv.direct_paths(attrs, x.shape, filt.shape)[0]
    args, want = fused_conv_case(x, filt, attrs, "bias", True, rng)
    got = kernel("conv2d", attrs)(*args, relu=True)[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max() * 12)
