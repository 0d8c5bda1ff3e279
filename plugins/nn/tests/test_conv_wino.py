"""conv2d's Winograd F(2x2, 3x3) forward (kernels/cpu/_conv_wino.h) for float32 NCHW 3x3
convs of stride 1: against the float64 NumPy reference and the direct kernels (conv.WINOGRAD
off), with Bias, ResidualData and relu in its store; the transformed filters kept per kernel
follow a Filter changed in place; images split over two threads give the one-thread output;
and an inference program of such convs gives the same outputs optimized (fused_conv2d_add_act)
and as saved. Each case asserts that it reaches the path."""
import numpy as np
import pytest

from headrace_nn.kernels.cpu import conv
from headrace_nn.reference.conv import conv2d as ref_conv

pytestmark = pytest.mark.skipif(not conv.DIRECT_OK, reason="needs AVX-512 (else conv2d "
                                "stays on im2col + GEMM, which test_conv.py covers)")

# (N, C, M, H, W, attrs)
CASES = [
    # the small ResNet's layers: 16 tiles a row (one vector), 8 (two rows a vector)
    (2, 16, 16, 32, 32, {"paddings": [1, 1]}),
    (1, 32, 32, 16, 16, {"paddings": [1, 1]}),
    # odd sizes: odd output rows and columns (the last tile half outside), 20 tiles a row
    # (3 halves, the vectors' halves on different rows), filters 13 = 8 + 4 + 1, channels 9
    (3, 9, 13, 11, 13, {"paddings": [1, 1]}),
    (2, 12, 20, 9, 40, {}),
    (1, 16, 5, 33, 35, {"paddings": [2, 2]}),
    (4, 8, 12, 7, 17, {"paddings": [0, 2, 1, 1]}),
    # a block's last vector with no tiles (an odd number of halves), 4 filters, groups
    (1, 10, 4, 6, 8, {"paddings": [1, 1]}),
    (2, 16, 24, 12, 20, {"paddings": [1, 1], "groups": 2}),
    # many images
    (17, 8, 8, 10, 10, {"paddings": [1, 1]}),
]


def _data(case, rng):
    n, c, m, h, w, attrs = case
    x = rng.standard_normal((n, c, h, w)).astype("float32")
    filt = rng.standard_normal((m, c // attrs.get("groups", 1), 3, 3)).astype("float32")
    return x, filt


def _shapes(case):
    n, c, m, h, w, attrs = case
    return (n, c, h, w), (m, c // attrs.get("groups", 1), 3, 3)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_path_is_taken(case):
    attrs = CASES[case][5]
    assert conv.winograd_path(dict(attrs), *_shapes(CASES[case]))


@pytest.mark.parametrize("attrs,xs,ws", [
    ({"strides": [2, 2], "paddings": [1, 1]}, (1, 16, 32, 32), (32, 16, 3, 3)),
    ({"paddings": [2, 2], "dilations": [2, 2]}, (1, 16, 16, 16), (16, 16, 3, 3)),
    ({}, (1, 16, 16, 16), (16, 16, 1, 1)),
    ({"paddings": [1, 1]}, (1, 3, 32, 32), (16, 3, 3, 3)),         # 3 input channels
    ({"paddings": [1, 1]}, (1, 16, 4, 4), (16, 16, 3, 3)),         # 4 output columns
    ({"paddings": [1, 1], "data_format": "NHWC"}, (1, 16, 16, 16), (16, 16, 3, 3)),
])
def test_path_is_not_taken(attrs, xs, ws):
    assert not conv.winograd_path(dict(attrs), xs, ws)


def _wino_and_direct(fn):
    try:
        conv.WINOGRAD = True
        wino = fn()
        conv.WINOGRAD = False
        direct = fn()
    finally:
        conv.WINOGRAD = True
    return wino, direct


@pytest.mark.parametrize("relu", [False, True], ids=["", "relu"])
@pytest.mark.parametrize("extra", ["", "bias", "residual", "both"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_forward_matches_reference(kernel, fused_conv_case, case, extra, relu):
    rng = np.random.default_rng(500 + case)
    x, filt = _data(CASES[case], rng)
    attrs = CASES[case][5]
    args, want = fused_conv_case(x, filt, attrs, extra, relu, rng)
    run = kernel("conv2d", attrs)
    got, direct = _wino_and_direct(lambda: run(*args, relu=relu)[0].copy())
    # The direct kernels' tolerance (test_conv_direct.py): F(2x2, 3x3)'s transforms add a
    # few roundings of values of the products' size, no more.
    tol = 2e-6 * np.abs(want).max() * np.sqrt(filt[0].size)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    np.testing.assert_allclose(got, direct, rtol=0, atol=tol)
    # relative to the float64 result, the error stays near float32's rounding
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_fused_kernel_and_recycled_output(kernel):
    # fused_conv2d_add_act hands its recycled Output to the conv: steady calls agree.
    rng = np.random.default_rng(600)
    x, filt = _data(CASES[0], rng)
    bias = rng.standard_normal(16).astype("float32")
    res = rng.standard_normal((2, 16, 32, 32)).astype("float32")
    run = kernel("fused_conv2d_add_act", {"paddings": [1, 1], "activation": "relu"})
    want = np.maximum(ref_conv({"Input": x.astype("float64"),
                                "Filter": filt.astype("float64")},
                               {"paddings": [1, 1]})["Output"] +
                      bias.reshape(1, -1, 1, 1) + res, 0)
    for _ in range(3):
        got, _ = run(x, filt, bias, res)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_filter_changed_in_place_is_transformed_again(kernel):
    # The kernel keeps the transformed filters while Filter holds the values they came from:
    # a training step's update in place, or new values of the same shape, are seen.
    rng = np.random.default_rng(700)
    x, filt = _data(CASES[1], rng)
    run = kernel("conv2d", {"paddings": [1, 1]})
    for step in range(3):
        want = ref_conv({"Input": x.astype("float64"), "Filter": filt.astype("float64")},
                        {"paddings": [1, 1]})["Output"]
        (got,) = run(x, filt)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
        filt -= 0.1 * rng.standard_normal(filt.shape).astype("float32")   # in place
        filt[0, 0, 0, 0] += 1.0 if step else 0.0
    other = rng.standard_normal((32, 32, 3, 3)).astype("float32")
    want = ref_conv({"Input": x.astype("float64"), "Filter": other.astype("float64")},
                    {"paddings": [1, 1]})["Output"]
    np.testing.assert_allclose(run(x, other)[0], want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_two_threads_give_the_serial_output(kernel):
    import headrace as hr
    rng = np.random.default_rng(800)
    x = rng.standard_normal((8, 16, 32, 32)).astype("float32")
    filt = rng.standard_normal((16, 16, 3, 3)).astype("float32")
    run = kernel("conv2d", {"paddings": [1, 1]})
    before = hr.get_num_threads()
    try:
        hr.set_num_threads(1)
        (one,) = run(x, filt)
        one = one.copy()
        hr.set_num_threads(2)
        (two,) = run(x, filt)
    finally:
        hr.set_num_threads(before)
    np.testing.assert_array_equal(one, two)


def test_inference_program_optimized_equals_saved(tmp_path):
    # conv + batch_norm + relu and a residual block at 16 channels: the optimized program's
    # fused_conv2d_add_act (Winograd) gives the saved program's outputs (also Winograd, on
    # conv2d) and those of the direct kernels.
    import headrace as hr
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 3
    with hr.program_guard(main, startup):
        img = hr.layers.data("img", shape=[-1, 8, 12, 20], dtype="float32")
        h = hr.layers.conv2d(img, num_filters=16, filter_size=3, padding=1, bias_attr=False)
        h = hr.layers.batch_norm(h, act="relu", is_test=True)
        r = hr.layers.conv2d(h, num_filters=16, filter_size=3, padding=1, act="relu")
        r = hr.layers.conv2d(r, num_filters=16, filter_size=3, padding=1)
        out = hr.layers.relu(hr.layers.elementwise_add(r, h))
    exe = hr.Executor(hr.CPUPlace())
    scope = hr.Scope()
    exe.run(startup, scope=scope)
    hr.io.save_inference_model(str(tmp_path), ["img"], [out], exe, main, scope=scope)
    x = np.random.default_rng(900).standard_normal((3, 8, 12, 20)).astype("float32")
    results = {}
    for optimize in (False, True):
        s = hr.Scope()
        prog, feeds, targets = hr.io.load_inference_model(str(tmp_path), exe, scope=s,
                                                          optimize=optimize)
        types = {op.type for op in prog.global_block().ops}
        assert ("fused_conv2d_add_act" in types) == optimize

        def run(p=prog, t=targets, s=s):
            return exe.run(p, feed={"img": x}, fetch_list=t, scope=s)[0].copy()

        results[optimize] = _wino_and_direct(run)
    scale = np.abs(results[False][1]).max()
    for got in (results[False][0], results[True][0], results[True][1]):
        np.testing.assert_allclose(got, results[False][1], rtol=0, atol=1e-5 * scale)
