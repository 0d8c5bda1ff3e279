"""arg_max / arg_min on CUDAPlace (Numba's simulator without a GPU) against the CPU kernel:
axes, keepdims, flatten, int32/int64 results, ties (the first index), NaN (the first NaN),
rows longer than a block, int64 values above 2**53, and the CPU kernel's errors. Shapes stay
tiny: the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op

pytestmark = pytest.mark.cuda


def _attrs(**kw):
    a = {"axis": -1, "keepdims": False, "flatten": False, "dtype": 3}
    a.update(kw)
    return a


def _both(op, x, attrs):
    cpu, gpu = (np.asarray(run_op(op, {"X": x}, ["Out"], attrs, p)["Out"][0].numpy())
                for p in (hr.CPUPlace(), hr.CUDAPlace(0)))
    assert cpu.dtype == gpu.dtype and cpu.shape == gpu.shape, (cpu, gpu)
    np.testing.assert_array_equal(gpu, cpu)
    return gpu


@pytest.mark.parametrize("op", ["arg_max", "arg_min"])
@pytest.mark.parametrize("attrs", [_attrs(axis=0), _attrs(axis=1, keepdims=True),
                                   _attrs(axis=-1, dtype=2), _attrs(flatten=True),
                                   _attrs(flatten=True, keepdims=True)])
def test_axes(op, attrs):
    x = np.array([[[3, 1], [3, 0], [1, 1]], [[0, 5], [2, 5], [0, 0]]], dtype="float32")
    _both(op, x, attrs)           # ties along every axis: the first index wins


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "float16", "float64"])
def test_dtypes(dtype):
    x = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    _both("arg_max", x, _attrs(axis=1))
    _both("arg_min", x, _attrs(axis=0))


def test_long_rows_nan_and_big_ints():
    x = np.random.default_rng(0).standard_normal((2, 150))
    x[0, 100] = x[0].max() + 1
    x[0, 140] = x[0, 100]
    _both("arg_max", x, _attrs())
    x[1, 90] = x[1, 130] = np.nan
    _both("arg_max", x, _attrs())
    _both("arg_min", x, _attrs())
    big = np.array([[2**60 + 1, 2**60, 2**60 + 1]], dtype="int64")
    _both("arg_max", big, _attrs())
    _both("arg_min", big, _attrs())
    long_big = np.full((1, 40), 2**60, dtype="int64")     # a block per output, in int64
    long_big[0, 33] += 1
    long_big[0, 7] -= 1
    _both("arg_max", long_big, _attrs())
    _both("arg_min", long_big, _attrs())


@pytest.mark.parametrize("x,attrs,match", [
    (np.zeros((2, 0), "float32"), _attrs(), "no entries"),
    (np.zeros((0,), "float32"), _attrs(flatten=True), "no entries")])
def test_errors(x, attrs, match):
    with pytest.raises(Exception, match=match):
        run_op("arg_max", {"X": x}, ["Out"], attrs, hr.CUDAPlace(0))


def test_kernel_errors():
    # What the op definition refuses first: the kernel itself must refuse it too, as the CPU's.
    from numba import cuda

    from headrace_tensor.kernels.cuda.arg_min_max import ArgMax
    with pytest.raises(ValueError, match="0-D"):
        ArgMax(_attrs())(cuda.to_device(np.float32(1.0)))
    with pytest.raises(IndexError, match="out of range"):
        ArgMax(_attrs(axis=2))(cuda.to_device(np.zeros((2, 3), "float32")))


def test_empty_outer():
    _both("arg_max", np.zeros((0, 3), "float32"), _attrs(axis=1))
