"""fused_conv2d_add_act (Paddle Inference's conv2d_fusion): the CPU kernel against the NumPy
reference (relu and identity, with and without ResidualData, strides/paddings/dilations/
groups, NHWC, both dtypes, the packed/direct conv paths' sizes), the same numbers as conv2d +
relu in one program, its recycled Output (written again only when nothing else holds it),
shape rule and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace.errors import OpValidationError
from headrace.testing import infer_shapes

OP = "fused_conv2d_add_act"


def _inputs(rng, dtype, xs, ws, groups=1, residual=None, nhwc=False):
    x = rng.standard_normal(xs).astype(dtype)
    if nhwc:
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    inputs = {"Input": x, "Filter": (rng.standard_normal(ws) * 0.3).astype(dtype),
              "Bias": rng.standard_normal(ws[0]).astype(dtype)}
    if residual is not None:
        inputs["ResidualData"] = rng.standard_normal(residual).astype(dtype)
    return inputs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("act", ["relu", "identity"])
@pytest.mark.parametrize("xs, ws, attrs, res", [
    ((2, 3, 9, 8), (4, 3, 3, 3), {"paddings": [1, 1]}, None),
    ((2, 3, 9, 8), (4, 3, 3, 3), {"paddings": [1, 1]}, (2, 4, 9, 8)),
    ((1, 4, 7, 6), (6, 2, 3, 2), {"strides": [2, 1], "paddings": [1, 0, 2, 1],
                                  "dilations": [1, 2], "groups": 2}, None),
    ((3, 8, 6, 6), (5, 8, 1, 1), {}, (3, 5, 6, 6)),                # 1x1: no im2col
    ((2, 16, 32, 32), (16, 16, 3, 3), {"paddings": [1, 1]}, (2, 16, 32, 32)),  # ResNet's
])
def test_against_reference(check, dtype, act, xs, ws, attrs, res):
    inputs = _inputs(np.random.default_rng(1), dtype, xs, ws, residual=res)
    tol = 2e-5 if dtype == "float32" else None     # sums of up to 144 float32 products
    check(OP, inputs, dict(attrs, activation=act), rtol=tol, atol=tol)


def test_nhwc_against_reference(check):
    inputs = _inputs(np.random.default_rng(2), "float32", (2, 3, 7, 5), (4, 3, 3, 3),
                     nhwc=True, residual=(2, 7, 5, 4))
    check(OP, inputs, {"data_format": "NHWC", "paddings": [1, 1], "activation": "relu"},
          rtol=1e-5, atol=1e-5)


def test_relu_keeps_nan_as_relu_does(kernel):
    k = kernel(OP, {"activation": "relu"})
    x = np.zeros((1, 1, 2, 2), "float32")
    x[0, 0, 0, 0] = np.nan
    (out, rest) = k(x, np.ones((1, 1, 1, 1), "float32"), np.array([-1.0], "float32"))
    assert rest == [] and np.isnan(out[0, 0, 0, 0]) and (out.ravel()[1:] == 0).all()


def test_equals_conv2d_bias_relu_in_one_program():
    rng = np.random.default_rng(3)
    inputs = _inputs(rng, "float32", (2, 3, 10, 10), (8, 3, 3, 3), residual=(2, 8, 10, 10))
    prog = hr.Program()
    blk = prog.global_block()
    for name, slot in (("x", "Input"), ("w", "Filter"), ("b", "Bias"), ("r", "ResidualData")):
        blk.create_var(name=name, shape=list(inputs[slot].shape), dtype="float32")
    conv_in = {"Input": ["x"], "Filter": ["w"], "Bias": ["b"], "ResidualData": ["r"]}
    attrs = {"paddings": [1, 1]}
    blk.append_op("conv2d", conv_in, {"Output": ["c"]}, attrs)
    blk.append_op("relu", {"X": ["c"]}, {"Out": ["y"]})
    blk.append_op(OP, conv_in, {"Output": ["f"]}, dict(attrs, activation="relu"))
    feed = {"x": inputs["Input"], "w": inputs["Filter"], "b": inputs["Bias"],
            "r": inputs["ResidualData"]}
    y, f = hr.Executor(hr.CPUPlace()).run(prog, feed=feed, fetch_list=["y", "f"])
    np.testing.assert_array_equal(f, y)
    assert (y == 0).mean() > 0.2 and y.max() > 0.5


def test_output_is_recycled_only_when_nothing_holds_it(kernel):
    rng = np.random.default_rng(4)
    k = kernel(OP, {"paddings": [1, 1], "activation": "relu"})
    a = _inputs(rng, "float32", (2, 3, 6, 6), (4, 3, 3, 3))
    args = (a["Input"], a["Filter"], a["Bias"])
    (held, _) = k(*args)
    first = held.copy()
    (second, _) = k(a["Input"] + 1, a["Filter"], a["Bias"])
    assert second is not held                      # held by the caller: a new array
    np.testing.assert_array_equal(held, first)     # ... and the held one untouched
    ptr = second.__array_interface__["data"][0]
    del second, held
    (third, _) = k(*args)                          # only the kernel held it: written again
    assert third.__array_interface__["data"][0] == ptr
    np.testing.assert_array_equal(third, first)
    del third
    (other, _) = k(a["Input"][:1], a["Filter"], a["Bias"])   # another batch: a new shape
    assert other.shape == (1, 4, 6, 6)
    np.testing.assert_array_equal(other, first[:1])


def test_shape_rule_and_errors(kernel):
    t = {"Input": ((2, 3, 8, 8), "float32", 0), "Filter": ((4, 3, 3, 3), "float32", 0),
         "Bias": ((4,), "float32", 0)}
    assert infer_shapes(OP, t, attrs={"strides": [2, 2]})["Output"][0] == \
        ((2, 4, 3, 3), "float32")
    with pytest.raises(OpValidationError, match="activation"):
        infer_shapes(OP, t, attrs={"activation": "gelu"})
    with pytest.raises(OpValidationError, match="split_channels"):
        infer_shapes(OP, t, attrs={"split_channels": [2, 2]})
    k = kernel(OP, {})
    with pytest.raises(ValueError, match="Bias is required"):
        k(np.ones((1, 3, 4, 4), "float32"), np.ones((4, 3, 3, 3), "float32"), None)
