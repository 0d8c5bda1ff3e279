"""fc (Paddle Inference's fused fully connected op): shape inference, the CPU kernel against
the NumPy reference (in_num_col_dims, with and without Bias, relu, an empty contraction, the
packed GEMM's sizes), errors, and agreement with the unfused mul + elementwise_add + relu."""
import numpy as np
import pytest

from headrace import ShapeError
from headrace.errors import OpValidationError

F32 = "float32"


def t(shape, dtype=F32):
    return (shape, dtype, 0)


@pytest.mark.parametrize("x, w, attrs, out", [
    ([2, 3], [3, 4], {}, (2, 4)),
    ([2, 3, 4], [12, 5], {}, (2, 5)),
    ([2, 3, 4], [4, 5], {"in_num_col_dims": 2}, (2, 3, 5)),
    ([-1, 3, 4], [12, 5], {}, (-1, 5)),
])
def test_fc_shapes(infer, x, w, attrs, out):
    assert infer("fc", {"Input": t(x), "W": t(w), "Bias": t([w[1]])}, attrs) == (out, F32)


@pytest.mark.parametrize("inputs, attrs, match", [
    ({"Input": t([2, 3]), "W": t([4, 5])}, {}, r"flattened width 3 != W \(w_0\)'s height 4"),
    ({"Input": t([2, 3]), "W": t([3, 5, 1])}, {}, "W .* must be a matrix"),
    ({"Input": t([2, 3]), "W": t([3, 5]), "Bias": t([4])}, {}, "one value per output column"),
    ({"Input": t([2, 3]), "W": t([3, 5]), "Bias": t([2, 5])}, {}, "one value per output"),
    ({"Input": t([2, 3]), "W": t([3, 5])}, {"in_num_col_dims": 2}, "cannot be flattened"),
    ({"Input": t([2, 3]), "W": t([3, 5], "float64")}, {}, "is float32 but W"),
])
def test_fc_shape_errors(infer, inputs, attrs, match):
    with pytest.raises(ShapeError, match=match):
        infer("fc", inputs, attrs)


def test_fc_activation_choices(infer):
    with pytest.raises(OpValidationError, match="activation_type"):
        infer("fc", {"Input": t([2, 3]), "W": t([3, 5])}, {"activation_type": "gelu"})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, ws, n", [((1, 7), (7, 3), 1), ((5, 2, 3), (6, 9), 1),
                                       ((2, 3, 4), (4, 5), 2),
                                       ((64, 96), (96, 80), 1)])   # the packed GEMM's size
@pytest.mark.parametrize("act", ["", "relu"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_fc_against_reference(check, dtype, xs, ws, n, act, with_bias):
    rng = np.random.default_rng(3)
    inputs = {"Input": rng.standard_normal(xs).astype(dtype),
              "W": rng.standard_normal(ws).astype(dtype)}
    if with_bias:
        inputs["Bias"] = rng.standard_normal((1, ws[1]) if n == 1 else ws[1]).astype(dtype)
    # float32 sums of 96 products differ from the float64 reference by a few 1e-6.
    tol = 2e-5 if dtype == "float32" and ws[0] > 50 else None
    check("fc", inputs, {"in_num_col_dims": n, "activation_type": act}, rtol=tol, atol=tol)


def test_fc_empty_contraction(check):
    check("fc", {"Input": np.ones((3, 0), F32), "W": np.ones((0, 4), F32),
                 "Bias": np.arange(4, dtype=F32) - 1.5}, {"activation_type": "relu"})


def test_fc_equals_mul_add_relu(math_registry):
    import headrace as hr
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(F32) for s in ((8, 30), (30, 20), (20,)))
    prog = hr.Program(math_registry)
    blk = prog.global_block()
    for name, v in (("x", x), ("w", w), ("b", b)):
        blk.create_var(name=name, shape=list(v.shape), dtype=F32)
    blk.append_op("mul", {"X": ["x"], "Y": ["w"]}, {"Out": ["m"]})
    blk.append_op("elementwise_add", {"X": ["m"], "Y": ["b"]}, {"Out": ["a"]}, {"axis": 1})
    blk.append_op("relu", {"X": ["a"]}, {"Out": ["r"]})
    blk.append_op("fc", {"Input": ["x"], "W": ["w"], "Bias": ["b"]}, {"Out": ["f"]},
                  {"activation_type": "relu"})
    r, f = hr.Executor(hr.CPUPlace()).run(prog, feed={"x": x, "w": w, "b": b},
                                          fetch_list=["r", "f"], scope=hr.Scope())
    np.testing.assert_allclose(f, r, rtol=1e-5, atol=1e-5)


def test_fc_kernel_errors():
    from headrace_math.kernels.cpu.fc import FC
    k = FC({"in_num_col_dims": 1, "activation_type": ""})
    with pytest.raises(TypeError, match="fc: Input, W and Bias must share"):
        k(np.ones((2, 3), "float32"), np.ones((3, 4), "float64"), None)
    with pytest.raises(ValueError, match="flattens to"):
        k(np.ones((2, 3), "float32"), np.ones((4, 4), "float32"), None)
    with pytest.raises(ValueError, match="one value per output column"):
        k(np.ones((2, 3), "float32"), np.ones((3, 4), "float32"), np.ones(3, "float32"))


@pytest.mark.parametrize("xs, n, act, bias", [((4, 6), 1, "relu", True),
                                              ((2, 3, 6), 2, "", True),
                                              ((2, 3, 2), 1, "relu", False)])
def test_fc_onnx_export(math_registry, tmp_path, xs, n, act, bias):
    """The plugin's fc exporter (entry point headrace.onnx) run by ONNX Runtime gives the
    kernel's numbers."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    import headrace as hr
    import headrace_math.onnx
    rng = np.random.default_rng(11)
    k = int(np.prod(xs[n:]))
    x = rng.standard_normal(xs).astype(F32)
    prog = hr.Program(math_registry)
    blk = prog.global_block()
    blk.create_var(name="x", shape=[-1] + list(xs[1:]), dtype=F32)
    scope = hr.Scope()
    inputs = {"Input": ["x"], "W": ["w"]}
    blk.create_parameter("w", [k, 5])
    scope.set("w", hr.Tensor(rng.standard_normal((k, 5)).astype(F32)))
    if bias:
        blk.create_parameter("b", [5])
        scope.set("b", hr.Tensor(rng.standard_normal(5).astype(F32)))
        inputs["Bias"] = ["b"]
    blk.append_op("fc", inputs, {"Out": ["y"]},
                  {"in_num_col_dims": n, "activation_type": act})
    (want,) = hr.Executor(hr.CPUPlace()).run(prog, feed={"x": x}, fetch_list=["y"],
                                             scope=scope)
    exporters = hr.onnx.build_exporters(plugins=[headrace_math.onnx], autoload=False)
    path = str(tmp_path / "fc.onnx")
    hr.onnx.export(prog, ["x"], ["y"], path, scope=scope, exporters=exporters)
    (got,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- float32: the direct GEMM (W read in place, bias and relu fused into the store) ---------------

@pytest.mark.parametrize("m, k, n", [
    (1, 784, 256), (1, 300, 130), (2, 40, 10), (3, 50, 300),   # 1-3 rows: four panels a tile
    (5, 33, 17), (13, 70, 16), (64, 96, 80), (64, 256, 10),    # partial and half panels
    (30, 0, 40),                                               # an empty sum: act(bias)
    (600, 40, 45), (9, 1100, 40)])                  # past the rows or the k the path takes
@pytest.mark.parametrize("act", ["", "relu"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_fc_float32_direct_and_packed_or_blas_agree(m, k, n, act, with_bias):
    # Either way the same sums; the direct path sums each element over k in one order, the
    # others in blocks (or BLAS's order), so they agree to float32 rounding of k products.
    from headrace_math.kernels.cpu import matmul as kernels
    from headrace_math.kernels.cpu.fc import FC
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((m, k)).astype(F32), rng.standard_normal((k, n)).astype(F32)
    b = rng.standard_normal(n).astype(F32) if with_bias else None
    want = x.astype("float64") @ w.astype("float64") + (0 if b is None else b)
    want = np.maximum(want, 0) if act else want
    got = []
    before = kernels.use_packed_gemm()
    try:
        for packed in (True, False):
            kernels.use_packed_gemm(packed)
            got.append(FC({"in_num_col_dims": 1, "activation_type": act})(x, w, b)[0].copy())
    finally:
        kernels.use_packed_gemm(before)
    tol = 1e-6 * max(k, 1) ** 0.5 * 4
    for g in got:
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got[0], got[1], rtol=tol, atol=tol)


@pytest.mark.parametrize("m, n", [(64, 256), (1, 512), (200, 40)])
def test_fc_float32_direct_is_the_same_on_two_threads(m, n):
    # Threads share C by whole panels or 12-row bands; each element one thread's serial sum.
    import headrace as hr
    from headrace_math.kernels.cpu.fc import FC
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((m, 700)).astype(F32), rng.standard_normal((700, n)).astype(F32)
    b = rng.standard_normal(n).astype(F32)
    was = hr.get_num_threads()
    try:
        outs = []
        for threads in (1, 2):
            hr.set_num_threads(threads)
            outs.append(FC({"in_num_col_dims": 1, "activation_type": "relu"})(x, w, b)[0])
    finally:
        hr.set_num_threads(was)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_fc_follows_its_weight_between_runs():
    # The float32 kernel reads W where it lies on every call and keeps no packed copy, so an
    # update of the parameter between two inference runs shows in the next one: a training
    # step's sgd (which writes the scope's array in place), a write into that array, and
    # scope.set of a new array.
    import headrace as hr
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 96)).astype(F32)
    w0 = rng.standard_normal((96, 40)).astype(F32)
    g = rng.standard_normal((96, 40)).astype(F32)
    infer, train = hr.Program(), hr.Program()
    for prog in (infer, train):
        prog.global_block().create_parameter("w", [96, 40], dtype=F32)
    blk = infer.global_block()
    blk.create_var(name="x", shape=[-1, 96], dtype=F32)
    blk.append_op("fc", {"Input": ["x"], "W": ["w"]}, {"Out": ["y"]},
                  {"activation_type": "relu"})
    blk = train.global_block()
    blk.create_var(name="g", shape=[96, 40], dtype=F32)
    blk.create_var(name="lr", shape=[1], dtype=F32)
    blk.append_op("sgd", {"Param": ["w"], "Grad": ["g"], "LearningRate": ["lr"]},
                  {"ParamOut": ["w"]})
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    scope.set("w", hr.Tensor(w0.copy()))

    def run():
        return exe.run(infer, feed={"x": x}, fetch_list=["y"], scope=scope)[0]

    def want():
        w = scope.find("w").numpy().astype("float64")
        return np.maximum(x.astype("float64") @ w, 0)

    first = run()
    np.testing.assert_allclose(first, want(), rtol=1e-5, atol=1e-4)
    array = scope.find("w").numpy()
    exe.run(train, feed={"g": g, "lr": np.array([0.5], F32)}, scope=scope)
    assert scope.find("w").numpy() is array     # updated in place: the same buffer
    np.testing.assert_allclose(run(), want(), rtol=1e-5, atol=1e-4)
    assert not np.allclose(run(), first)
    array[:10] *= -1                            # written behind the executor's back
    np.testing.assert_allclose(run(), want(), rtol=1e-5, atol=1e-4)
    scope.set("w", hr.Tensor(w0 * 2))           # a new array
    np.testing.assert_allclose(run(), want(), rtol=1e-5, atol=1e-4)
