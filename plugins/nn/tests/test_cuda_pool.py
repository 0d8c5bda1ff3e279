"""pool2d / pool2d_grad on CUDAPlace (Numba's simulator without a GPU) against the CPU kernel:
max and avg, exclusive or not, paddings and padding_algorithm, ceil_mode, global and adaptive
pooling, NCHW and NHWC, NaN in a max window, ties, empty batches and the refusals. Shapes stay
tiny: the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op
from headrace.testing.parity import same_on_cpu_and_cuda

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)

CASES = [
    dict(pooling_type="max", ksize=[2, 2], strides=[2, 2]),
    dict(pooling_type="max", ksize=[3, 3], strides=[2, 2], paddings=[1, 1], ceil_mode=True),
    dict(pooling_type="avg", ksize=[3, 2], strides=[1, 2], paddings=[1, 0, 2, 1]),
    dict(pooling_type="avg", ksize=[3, 3], strides=[2, 2], paddings=[1, 1], exclusive=False),
    dict(pooling_type="max", ksize=[3, 3], strides=[2, 1], padding_algorithm="SAME"),
    dict(pooling_type="avg", ksize=[2, 3], strides=[2, 2], padding_algorithm="VALID",
         paddings=[1, 1]),
    dict(pooling_type="avg", ksize=[1, 1], global_pooling=True),
    dict(pooling_type="max", ksize=[1, 1], global_pooling=True),
    dict(pooling_type="avg", ksize=[2, 3], adaptive=True),
    dict(pooling_type="max", ksize=[3, 4], adaptive=True),
    dict(pooling_type="max", ksize=[7, 6], adaptive=True),   # more windows than pixels
]


def _check(x, attrs):
    out = same_on_cpu_and_cuda("pool2d", {"X": x}, ["Out"], attrs, tol=1e-6, atol=0)["Out"]
    dy = np.random.default_rng(3).standard_normal(out.shape).astype(x.dtype)
    same_on_cpu_and_cuda("pool2d_grad", {"X": x, "Out": out, "Out@GRAD": dy}, ["X@GRAD"],
                         attrs, tol=1e-6, atol=1e-7)


@pytest.mark.parametrize("attrs", CASES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pool_like_the_cpu(attrs, layout):
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 5)).astype("float32")
    x[0, 1, :2, :2] = 1.0      # a tie: the gradient goes to the first maximum
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    _check(x, dict(attrs, data_format=layout))


def test_float64_and_nan_wins_a_max_window():
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 5))
    x[0, 0, 1, 1] = np.nan
    x[0, 1, 3, 4] = np.nan
    _check(x, dict(pooling_type="max", ksize=[2, 2], strides=[1, 1]))
    _check(x, dict(pooling_type="max", ksize=[3, 3], strides=[2, 2], paddings=[1, 1]))


def test_empty_batch():
    x = np.zeros((0, 3, 4, 4), "float32")
    _check(x, dict(pooling_type="avg", ksize=[2, 2], strides=[2, 2]))


@pytest.mark.parametrize("attrs,x,match", [
    (dict(pooling_type="min", ksize=[2, 2]), np.zeros((1, 1, 2, 2), "float32"), "pooling_type"),
    (dict(pooling_type="max", ksize=[3, 3]), np.zeros((1, 1, 2, 2), "float32"), "smaller"),
    (dict(pooling_type="max", ksize=[2, 2]), np.zeros((1, 2, 2), "float32"), "rank|4-D"),
    (dict(pooling_type="max", ksize=[2, 2]), np.zeros((1, 1, 2, 2), "int32"), "dtype"),
])
def test_refusals_as_the_cpu(attrs, x, match):
    for place in (CPU, GPU):
        with pytest.raises(Exception, match=match):
            run_op("pool2d", {"X": x}, ["Out"], attrs, place)


def test_grad_refuses_a_wrong_out_shape():
    x = np.zeros((1, 1, 4, 4), "float32")
    bad = np.zeros((1, 1, 3, 3), "float32")
    for place in (CPU, GPU):
        with pytest.raises(Exception, match="pooled"):
            run_op("pool2d_grad", {"X": x, "Out": bad, "Out@GRAD": bad}, ["X@GRAD"],
                   dict(pooling_type="max", ksize=[2, 2], strides=[2, 2]), place)
