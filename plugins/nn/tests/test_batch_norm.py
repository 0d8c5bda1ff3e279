"""batch_norm: layouts, statistics dtypes, in-place running statistics, errors; the CPU kernel
against the reference (training and inference)."""
import numpy as np
import pytest

from headrace import Program
from headrace.errors import OpValidationError, ShapeError

STATS = ("Scale", "Bias", "Mean", "Variance")


def batch_norm(x_shape, c, x_dtype="float32", p_dtype="float32", attrs=None, stat_shapes=None,
               mean_out="mean", extra=None, x_lod=0):
    """Build one batch_norm the way the layer does: MeanOut/VarianceOut are Mean/Variance."""
    prog = Program()
    block = prog.global_block()
    inputs = {"X": block.create_var(name="x", shape=x_shape, dtype=x_dtype, lod_level=x_lod)}
    for slot in STATS:
        shape = (stat_shapes or {}).get(slot, [c])
        inputs[slot] = block.create_var(name=slot.lower(), shape=shape, dtype=p_dtype)
    for slot, (shape, dtype) in (extra or {}).items():
        inputs[slot] = block.create_var(name=slot.lower(), shape=shape, dtype=dtype)
    op = block.append_op("batch_norm", inputs, {"Y": "y", "MeanOut": mean_out,
                                                "VarianceOut": "variance"}, attrs or {})
    return block, op


@pytest.mark.parametrize("x_shape, layout, c", [
    ([8, 16], "NCHW", 16), ([8, 16, 5], "NCHW", 16), ([8, 16, 5, 5], "NCHW", 16),
    ([8, 16, 2, 5, 5], "NCHW", 16), ([8, 5, 5, 16], "NHWC", 16), ([8, 16], "NHWC", 16),
    ([-1, 16, -1, -1], "NCHW", 16), ([-1, -1, -1, 16], "NHWC", 16),
])
def test_shapes(x_shape, layout, c):
    block, op = batch_norm(x_shape, c, attrs={"data_layout": layout})
    assert block.var("y").shape == tuple(x_shape)
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        var = block.var(op.output(slot)[0])
        assert (var.shape, var.dtype) == ((c,), "float32")


def test_unknown_channels_take_the_statistics_size():
    block, op = batch_norm([-1, -1, 4, 4], 16)
    assert block.var(op.output("SavedMean")[0]).shape == (16,)


@pytest.mark.parametrize("x_dtype, p_dtype", [
    ("float16", "float32"), ("float32", "float32"), ("float64", "float64")])
def test_dtypes(x_dtype, p_dtype):
    block, op = batch_norm([2, 3, 4, 4], 3, x_dtype, p_dtype)
    assert block.var("y").dtype == x_dtype
    assert block.var(op.output("SavedVariance")[0]).dtype == p_dtype


def test_running_statistics_are_updated_in_place():
    block, op = batch_norm([2, 3, 4, 4], 3)
    assert op.output("MeanOut") == op.input("Mean") == ["mean"]
    assert op.output("VarianceOut") == op.input("Variance") == ["variance"]
    assert block.var("mean").shape == (3,)


def test_intermediates_are_created_and_y_keeps_the_lod():
    block, op = batch_norm([-1, 3], 3, x_lod=1)
    assert block.var("y").lod_level == 1
    # ReserveSpace is optional as well as intermediate: it is only created when asked for.
    assert op.output("ReserveSpace") == []
    assert op.output("SavedMean") and op.output("SavedVariance")


def test_momentum_tensor():
    block, _ = batch_norm([2, 3], 3, extra={"MomentumTensor": ([1], "float32")})
    assert block.var("y").shape == (2, 3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(x_shape=[8], c=8), r"X \(x\) must be 2-D to 5-D"),
    (dict(x_shape=[1, 2, 3, 4, 5, 6], c=2), r"X \(x\) must be 2-D to 5-D"),
    (dict(x_shape=[8, 16, 4, 4], c=4), r"Scale \(scale\) must hold one value per channel of X"),
    (dict(x_shape=[8, 4, 4, 16], c=16), r"Scale \(scale\) must hold one value per channel"),
    (dict(x_shape=[8, 16], c=16, stat_shapes={"Variance": [15]}),
     r"Variance \(variance\) must hold one value per channel"),
    (dict(x_shape=[8, -1], c=16, stat_shapes={"Bias": [15]}),
     r"Bias \(bias\) must hold one value per channel"),
    (dict(x_shape=[8, 16], c=16, stat_shapes={"Scale": [16, 1]}),
     r"Scale \(scale\) must hold one value per channel"),
    (dict(x_shape=[8, 16], c=16, x_dtype="float64"), r"Scale \(scale\) must be float64"),
    (dict(x_shape=[8, 16], c=16, x_dtype="float16", p_dtype="float64"),
     r"Scale \(scale\) must be float32 for float16 X"),
    (dict(x_shape=[8, 16], c=16, mean_out="mean_copy"),
     r"output 'MeanOut' must be the variable of input 'Mean'"),
    (dict(x_shape=[8, 16], c=16, extra={"MomentumTensor": ([2], "float32")}),
     r"MomentumTensor \(momentumtensor\) must hold one value"),
])
def test_shape_errors(kwargs, match):
    with pytest.raises(ShapeError, match=match):
        batch_norm(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(attrs={"epsilon": 0.01}), r"'epsilon' must be in \[0.0, 0.001\]"),
    (dict(attrs={"epsilon": -1e-6}), r"'epsilon' must be in"),
    (dict(attrs={"momentum": 1.5}), r"'momentum' must be in \[0.0, 1.0\]"),
    (dict(attrs={"data_layout": "AnyLayout"}), r"'data_layout' must be one of"),
    (dict(attrs={"is_test": 1}), r"'is_test' is not of type bool"),
    (dict(x_dtype="int32"), r"input 'X' \(x\) has an unsupported dtype"),
    (dict(p_dtype="float16"), r"input 'Scale' \(scale\) has an unsupported dtype"),
])
def test_validation_errors(kwargs, match):
    with pytest.raises(OpValidationError, match=match):
        batch_norm([2, 3], 3, **kwargs)


# ---------------------------------------------------------------- kernel
def bn_inputs(rng, shape, layout, dtype, momentum_tensor=None):
    c = shape[-1] if layout == "NHWC" else shape[1]
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    inputs = {"X": x, "Scale": (rng.random(c) + 0.5).astype(dtype),
              "Bias": rng.standard_normal(c).astype(dtype),
              "Mean": rng.standard_normal(c).astype(dtype),
              "Variance": (rng.random(c) + 0.5).astype(dtype)}
    if momentum_tensor is not None:
        inputs["MomentumTensor"] = np.array([momentum_tensor], np.float32)
    return inputs


SHAPES = [((6, 4), "NCHW"), ((6, 4), "NHWC"), ((3, 4, 5), "NCHW"), ((2, 4, 3, 5), "NCHW"),
          ((2, 3, 5, 4), "NHWC"), ((2, 4, 2, 3, 2), "NCHW"), ((2, 2, 3, 2, 4), "NHWC")]
MODES = [{}, {"is_test": True}, {"use_global_stats": True},
         {"is_test": True, "trainable_statistics": True}]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, layout", SHAPES)
@pytest.mark.parametrize("mode", range(len(MODES)))
def test_kernel_matches_reference(check, dtype, shape, layout, mode):
    rng = np.random.default_rng(mode)
    attrs = dict(MODES[mode], data_layout=layout, momentum=0.8, epsilon=1e-4)
    check("batch_norm", bn_inputs(rng, shape, layout, dtype), attrs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_momentum_tensor_overrides_the_attribute(check, dtype):
    rng = np.random.default_rng(3)
    check("batch_norm", bn_inputs(rng, (4, 3, 2, 2), "NCHW", dtype, momentum_tensor=0.5),
          {"momentum": 0.9})


@pytest.mark.parametrize("attrs, updated", [({}, True), ({"is_test": True}, False),
                                            ({"use_global_stats": True}, False)])
def test_running_statistics_are_updated_in_place_when_training(run_bn, attrs, updated):
    rng = np.random.default_rng(4)
    inputs = bn_inputs(rng, (8, 3, 4, 4), "NCHW", "float32")
    mean, var = inputs["Mean"], inputs["Variance"]
    before = mean.copy(), var.copy()
    got, scope = run_bn(inputs, dict(attrs, momentum=0.75))
    # The scope's variables hold the very arrays given: written in place, not replaced.
    assert scope.find("mean").data is mean and scope.find("variance").data is var
    x = inputs["X"].astype(np.float64)
    batch_mean, batch_var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    if updated:
        np.testing.assert_allclose(mean, before[0] * 0.75 + batch_mean * 0.25, rtol=1e-5)
        np.testing.assert_allclose(var, before[1] * 0.75 + batch_var * 0.25, rtol=1e-5)
        np.testing.assert_allclose(got["SavedVariance"], 1 / np.sqrt(batch_var + 1e-5),
                                   rtol=1e-5)
    else:
        np.testing.assert_array_equal(mean, before[0])
        np.testing.assert_array_equal(var, before[1])
        np.testing.assert_array_equal(got["SavedMean"], np.zeros(3, np.float32))


def test_two_training_steps_accumulate(run_bn):
    rng = np.random.default_rng(5)
    inputs = bn_inputs(rng, (8, 2), "NCHW", "float64")
    m0 = inputs["Mean"].copy()
    run_bn(inputs, {"momentum": 0.5})
    run_bn(inputs, {"momentum": 0.5})
    batch = inputs["X"].mean(axis=0)
    np.testing.assert_allclose(inputs["Mean"], m0 * 0.25 + batch * 0.75, rtol=1e-12)


def test_kernel_copies_read_only_running_statistics(kernel):
    rng = np.random.default_rng(6)
    inputs = bn_inputs(rng, (4, 3), "NCHW", "float64")
    inputs["Mean"].flags.writeable = False
    before = inputs["Mean"].copy()
    y, mean_out, var_out, saved_mean, saved_var, reserve = kernel(
        "batch_norm", {}, "float64")(*(inputs[k] for k in ("X",) + STATS))
    np.testing.assert_array_equal(inputs["Mean"], before)
    assert mean_out is not inputs["Mean"] and var_out is inputs["Variance"]
    assert reserve.shape == (0,)


@pytest.mark.parametrize("which", ["strided", "readonly"])
def test_kernel_strided_and_readonly_x(kernel, variants, which):
    rng = np.random.default_rng(7)
    inputs = bn_inputs(rng, (3, 4, 2, 3), "NCHW", "float64")
    stats = [inputs[k] for k in STATS]
    want = kernel("batch_norm", {"is_test": True}, "float64")(inputs["X"], *stats)
    got = kernel("batch_norm", {"is_test": True}, "float64")(variants(inputs["X"])[which],
                                                              *stats)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("x, stats, error", [
    (np.ones((4,)), [np.ones(4)] * 4, ValueError),
    (np.ones((2, 3, 1, 1, 1, 1)), [np.ones(3)] * 4, ValueError),
    (np.ones((4, 3)), [np.ones(4)] * 4, ValueError),
    (np.ones((4, 3)), [np.ones(3, np.float32)] * 4, ValueError),
    (np.ones((4, 3), np.int64), [np.ones(3)] * 4, TypeError),
    (np.ones((0, 3)), [np.ones(3)] * 4, ValueError),  # training on no values
])
def test_kernel_rejects_bad_inputs(kernel, x, stats, error):
    with pytest.raises(error, match="batch_norm"):
        kernel("batch_norm", {}, "float64")(x, *stats)


def test_kernel_inference_on_an_empty_batch(kernel):
    out = kernel("batch_norm", {"is_test": True}, "float64")(np.ones((0, 3)), *[np.ones(3)] * 4)
    assert out[0].shape == (0, 3)


# ---------------------------------------------------------------- gradient
from headrace import gradients  # noqa: E402
from headrace.runtime import CPUPlace, Executor, Scope  # noqa: E402

GRADS = ("X", "Scale", "Bias")


def check_bn_grad(inputs, attrs, wrt=GRADS, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """headrace.testing.check_grad for batch_norm, whose MeanOut/VarianceOut must be the Mean/
    Variance variables (check_grad names every output itself): the analytic gradients of
    sum(Y * G) through gradients(), against central differences of the forward program. Mean
    and Variance are fed afresh on every run (training updates them in place)."""
    prog = Program()
    block = prog.global_block()
    ins = {}
    for slot in ("X",) + STATS:
        v = inputs[slot]
        ins[slot] = block.create_var(name=slot.lower(), shape=v.shape, dtype=v.dtype.name,
                                     need_check_feed=True, stop_gradient=slot not in wrt)
    block.append_op("batch_norm", ins, {"Y": "y", "MeanOut": "mean", "VarianceOut": "variance",
                                        "SavedMean": "saved_mean",
                                        "SavedVariance": "saved_variance"}, attrs)
    y = block.var("y")
    upstream = np.random.default_rng(seed).standard_normal(inputs["X"].shape)
    g = block.create_var(name="g", shape=y.shape, dtype=y.dtype, need_check_feed=True,
                         stop_gradient=True)
    fwd = prog.clone()
    grads = gradients([y], [ins[s] for s in wrt], target_gradients=[g])
    exe = Executor(CPUPlace())

    def feed(**changed):
        return {s.lower(): np.array(changed.get(s, inputs[s])) for s in ("X",) + STATS}

    analytic = exe.run(prog, feed={**feed(), "g": upstream}, fetch_list=grads, scope=Scope())
    for slot, got in zip(wrt, analytic):
        base = np.array(inputs[slot], dtype=np.float64)
        numeric = np.zeros_like(base)
        for k in range(base.size):
            vals = []
            for delta in (eps, -eps):
                moved = base.copy()
                moved.reshape(-1)[k] += delta
                (out,) = exe.run(fwd, feed=feed(**{slot: moved}), fetch_list=["y"],
                                 scope=Scope())
                vals.append(float(np.sum(out * upstream)))
            numeric.reshape(-1)[k] = (vals[0] - vals[1]) / (2 * eps)
        np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol,
                                   err_msg=f"batch_norm gradient of {slot} ({attrs})")


@pytest.mark.parametrize("shape, layout", [((5, 3), "NCHW"), ((3, 2, 3, 2), "NCHW"),
                                           ((2, 3, 2, 3), "NHWC"), ((3, 2, 4), "NCHW")])
@pytest.mark.parametrize("mode", [{}, {"use_global_stats": True}, {"is_test": True},
                                  {"is_test": True, "trainable_statistics": True}],
                         ids=["training", "global_stats", "is_test", "trainable_statistics"])
def test_gradient_matches_finite_differences(shape, layout, mode):
    inputs = bn_inputs(np.random.default_rng(8), shape, layout, "float64")
    check_bn_grad(inputs, dict(mode, data_layout=layout, epsilon=1e-4))


def test_gradient_of_one_input_alone():
    inputs = bn_inputs(np.random.default_rng(9), (4, 3, 2), "NCHW", "float64")
    for slot in GRADS:
        check_bn_grad(inputs, {}, wrt=(slot,))


def _grad_args(rng, shape, layout, dtype, attrs):
    from headrace_nn.reference.batch_norm import batch_norm as ref
    inputs = bn_inputs(rng, shape, layout, dtype)
    out = ref({k: v.copy() for k, v in inputs.items()}, dict(attrs, data_layout=layout))
    return {**inputs, "SavedMean": out["SavedMean"], "SavedVariance": out["SavedVariance"],
            "Y@GRAD": rng.standard_normal(shape).astype(dtype)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, layout", SHAPES)
@pytest.mark.parametrize("mode", range(len(MODES)))
def test_grad_kernel_matches_reference(check, dtype, shape, layout, mode):
    attrs = dict(MODES[mode], data_layout=layout, epsilon=1e-4)
    inputs = _grad_args(np.random.default_rng(mode), shape, layout, dtype, attrs)
    check("batch_norm_grad", inputs, attrs, rtol=1e-4 if dtype == "float32" else None,
          atol=1e-5 if dtype == "float32" else None)


def test_grad_kernel_skips_unbound_gradients(kernel):
    from headrace.runtime.kernel_info import KernelInfo, SlotVar
    inputs = _grad_args(np.random.default_rng(10), (4, 3), "NCHW", "float64", {})
    args = [inputs[k] for k in ("X",) + STATS + ("SavedMean", "SavedVariance", "Y@GRAD")]
    info = KernelInfo("batch_norm_grad", {}, outputs={"Scale@GRAD": (SlotVar("s"),)})
    full = kernel("batch_norm_grad", {}, "float64")(*args)
    dx, dscale, dbias = kernel("batch_norm_grad", {}, "float64", info)(*args)
    assert dx is None and dbias is None
    np.testing.assert_array_equal(dscale, full[1])


@pytest.mark.parametrize("attrs, change, match", [
    ({}, {"Y@GRAD": np.ones((4, 2))}, r"Y@GRAD\[4, 2\] must have X's shape"),
    ({}, {"SavedMean": np.ones(2)}, r"SavedMean float64\[2\] must be float64\[3\]"),
    ({}, {"SavedVariance": None}, r"input SavedVariance is needed \(batch statistics\)"),
    ({"use_global_stats": True}, {"Mean": None}, r"input Mean is needed \(global"),
    ({}, {"Y@GRAD": np.ones((4, 3), np.float32)}, r"Y@GRAD has dtype float32"),
])
def test_grad_kernel_rejects_bad_inputs(kernel, attrs, change, match):
    inputs = _grad_args(np.random.default_rng(11), (4, 3), "NCHW", "float64", attrs)
    inputs.update(change)
    args = [inputs[k] for k in ("X",) + STATS + ("SavedMean", "SavedVariance", "Y@GRAD")]
    with pytest.raises((ValueError, TypeError), match="batch_norm_grad: " + match):
        kernel("batch_norm_grad", attrs, "float64")(*args)


def test_backward_reads_running_statistics_only_with_global_stats():
    for attrs, reads in (({}, False), ({"use_global_stats": True}, True),
                         ({"is_test": True}, True),
                         ({"is_test": True, "trainable_statistics": True}, False)):
        block, op = batch_norm([4, 3], 3, "float64", "float64", attrs=attrs)
        x = block.var("x")
        x.stop_gradient = False
        gradients([block.var("y")], [x])
        (gop,) = [o for o in block.ops if o.type == "batch_norm_grad"]
        assert bool(gop.input("Mean")) == reads and bool(gop.input("Variance")) == reads
        assert set(gop.output_arg_names) == {"x@GRAD"}


def test_grad_kernel_float32_with_a_large_mean(kernel):
    # float32 planes are summed in float32 lanes (then in double) and X@GRAD is formed in
    # float32 from X - mean: with a mean of 1000 over unit spread, all three gradients must
    # still agree with the float64 kernel's. 37*5 = 185 values a plane: the 16-lane loop and
    # its tail.
    rng = np.random.default_rng(30)
    x = (1000 + rng.standard_normal((4, 3, 37, 5))).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(0, 2, 3))
    inv = 1 / np.sqrt(x64.var(axis=(0, 2, 3)) + 1e-5)
    got, want = [
        kernel("batch_norm_grad", {"epsilon": 1e-5}, dt)(
            x.astype(dt), scale.astype(dt), np.zeros(3, dt), np.zeros(3, dt), np.ones(3, dt),
            mean.astype(dt), inv.astype(dt), dy.astype(dt))
        for dt in ("float32", "float64")]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4 * np.abs(w).max())


def test_kernel_float32_with_a_large_mean(kernel):
    # Statistics from float32 lanes and Y from X - mean in float32, against the float64 kernel.
    rng = np.random.default_rng(31)
    x = (1000 + rng.standard_normal((4, 3, 37, 5))).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, 3)
    bias = rng.uniform(-0.2, 0.2, 3)
    got, want = [
        kernel("batch_norm", {"epsilon": 1e-5, "momentum": 0.9}, dt)(
            x.astype(dt), scale.astype(dt), bias.astype(dt), np.zeros(3, dt), np.ones(3, dt))
        for dt in ("float32", "float64")]
    for g, w in zip(got[:5], want[:5]):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4 * np.abs(w).max())
