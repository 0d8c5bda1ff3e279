"""conv2d / conv2d_grad on CUDAPlace (Numba's simulator without a GPU) against the CPU kernel:
groups, strides, paddings (2 and 4 values, SAME, VALID), dilations, NCHW and NHWC, Bias and
ResidualData, every gradient, empty batches and the refusals. Shapes stay tiny: the simulator
runs each thread in Python."""
from functools import partial

import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op
from headrace.testing.parity import same_on_cpu_and_cuda

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)
GRADS = ["Input@GRAD", "Filter@GRAD", "Bias@GRAD", "ResidualData@GRAD"]
_both = partial(same_on_cpu_and_cuda, tol={"float32": 1e-5, "float64": 1e-12})


def _case(attrs, N=2, C=3, H=5, W=5, M=4, k=(3, 3), dtype="float32", fused=False, seed=0):
    rng = np.random.default_rng(seed)
    groups = attrs.get("groups", 1)
    nhwc = attrs.get("data_format") == "NHWC"
    x = rng.standard_normal((N, H, W, C) if nhwc else (N, C, H, W)).astype(dtype)
    w = rng.standard_normal((M, C // groups, *k)).astype(dtype)
    ins = {"Input": x, "Filter": w}
    if fused:
        ins["Bias"] = rng.standard_normal(M).astype(dtype)
    out = run_op("conv2d", ins, ["Output"], attrs, CPU)["Output"][0].numpy()
    if fused:
        ins["ResidualData"] = rng.standard_normal(out.shape).astype(dtype)
    out = _both("conv2d", ins, ["Output"], attrs)["Output"]
    dy = rng.standard_normal(out.shape).astype(dtype)
    slots = GRADS if fused else GRADS[:2]
    _both("conv2d_grad", {"Input": x, "Filter": w, "Output@GRAD": dy}, slots, attrs)


@pytest.mark.parametrize("attrs,layout", [
    ({}, "NCHW"),
    ({"strides": [2, 2], "paddings": [1, 1]}, "NHWC"),
    ({"strides": [1, 2], "paddings": [0, 1, 2, 1], "dilations": [2, 1]}, "NCHW"),
    ({"strides": [1, 2], "paddings": [0, 1, 2, 1], "dilations": [2, 1]}, "NHWC"),
    ({"padding_algorithm": "SAME", "strides": [2, 2], "dilations": [2, 2]}, "NCHW"),
    ({"padding_algorithm": "VALID", "paddings": [3, 3]}, "NHWC"),
    ({"groups": 3, "paddings": [1, 1]}, "NCHW"),
    ({"groups": 3, "paddings": [1, 1]}, "NHWC"),
])
def test_conv2d_like_the_cpu(attrs, layout):
    groups = attrs.get("groups", 1)
    _case(dict(attrs, data_format=layout), C=3, M=3 * 2 if groups > 1 else 4)


def test_float64_grouped_with_bias_and_residual():
    _case({"groups": 2, "strides": [2, 1], "paddings": [1, 1]}, C=4, M=4, dtype="float64",
          fused=True)
    _case({"data_format": "NHWC", "paddings": [1, 1]}, C=2, M=3, k=(1, 2), fused=True)


def test_1x1_and_an_empty_batch():
    _case({}, k=(1, 1))
    _case({"paddings": [1, 1]}, N=0)


def test_only_the_filter_gradient():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 4, 4)).astype("float32")
    w = rng.standard_normal((3, 2, 2, 2)).astype("float32")
    dy = rng.standard_normal((2, 3, 3, 3)).astype("float32")
    _both("conv2d_grad", {"Input": x, "Filter": w, "Output@GRAD": dy}, ["Filter@GRAD"], {})


def test_channel_mismatch_is_refused():
    x = np.zeros((1, 3, 4, 4), "float32")
    w = np.zeros((2, 2, 3, 3), "float32")
    for place in (CPU, GPU):
        with pytest.raises(Exception, match="channels"):
            run_op("conv2d", {"Input": x, "Filter": w}, ["Output"], {}, place)


def test_one_image_chunks(monkeypatch):
    from headrace_nn.kernels.cuda import conv
    monkeypatch.setattr(conv, "COL_BYTES", 1)     # a chunk per image: the float64 dW sums
    _case({"paddings": [1, 1], "data_format": "NHWC"}, N=2, C=2, M=2, H=3, W=3)
