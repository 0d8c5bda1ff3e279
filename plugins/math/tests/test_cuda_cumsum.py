"""cumsum / cumsum_grad on CUDAPlace (Numba's simulator without a GPU) against the CPU kernel:
axes, exclusive, reverse, flatten, 0-D and empty tensors, int dtypes, rows short (a thread per
row) and long (a block per row, several chunks), and the CPU kernel's errors. Shapes stay tiny:
the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op

pytestmark = pytest.mark.cuda


def _attrs(**kw):
    a = {"axis": -1, "flatten": False, "exclusive": False, "reverse": False}
    a.update(kw)
    return a


def _both(op, inputs, attrs, slot="Out"):
    cpu, gpu = (np.asarray(run_op(op, inputs, [slot], attrs, p)[slot][0].numpy())
                for p in (hr.CPUPlace(), hr.CUDAPlace(0)))
    assert cpu.dtype == gpu.dtype and cpu.shape == gpu.shape, (cpu, gpu)
    if cpu.dtype.kind == "f":
        np.testing.assert_allclose(gpu, cpu, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(gpu, cpu)


X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype("float32")


@pytest.mark.parametrize("attrs", [_attrs(axis=0), _attrs(axis=1, exclusive=True),
                                   _attrs(axis=-1, reverse=True),
                                   _attrs(axis=1, exclusive=True, reverse=True),
                                   _attrs(flatten=True, reverse=True)])
def test_short_rows(attrs):
    _both("cumsum", {"X": X}, attrs)


@pytest.mark.parametrize("attrs", [_attrs(), _attrs(exclusive=True, reverse=True),
                                   _attrs(flatten=True, exclusive=True)])
def test_long_rows(attrs):
    x = np.random.default_rng(1).standard_normal((2, 150))
    _both("cumsum", {"X": x}, attrs)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_ints(dtype):
    x = np.arange(-4, 8).reshape(3, 4).astype(dtype)
    _both("cumsum", {"X": x}, _attrs(axis=0, exclusive=True))
    _both("cumsum", {"X": np.arange(100, dtype=dtype)}, _attrs(reverse=True))


def test_zero_d_and_empty():
    _both("cumsum", {"X": np.float32(2.5)}, _attrs(axis=0))
    _both("cumsum", {"X": np.zeros((0, 3), "float32")}, _attrs(axis=1))
    _both("cumsum", {"X": np.zeros((2, 0), "float32")}, _attrs(flatten=True))


def test_axis_error():
    from numba import cuda

    from headrace_math.kernels.cuda.cumsum import Cumsum
    with pytest.raises(IndexError, match="out of range"):
        Cumsum(_attrs(axis=2))(cuda.to_device(np.zeros((2, 3), "float32")))
    with pytest.raises(IndexError, match="0-D"):
        Cumsum(_attrs(axis=1))(cuda.to_device(np.float32(1.0)))


@pytest.mark.parametrize("attrs", [_attrs(flatten=True), _attrs(flatten=True, exclusive=True,
                                                                 reverse=True)])
def test_grad(attrs):
    g = np.random.default_rng(2).standard_normal(6)
    x = np.zeros((2, 3))
    _both("cumsum_grad", {"X": x, "Out@GRAD": g}, attrs, "X@GRAD")
