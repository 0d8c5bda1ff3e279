"""Reductions on CUDAPlace (Numba's simulator without a GPU) against the CPU kernel: several
reduced runs (the general index mapping), keep_dim, reduce_all, 0-D and empty tensors, NaN,
bool counts, in_dtype/out_dtype, the CPU kernel's errors, and every gradient. Shapes stay
tiny: the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op

pytestmark = pytest.mark.cuda


def _both(op, inputs, attrs, slot="Out"):
    got = [run_op(op, inputs, [slot], attrs, p)[slot][0].numpy()
           for p in (hr.CPUPlace(), hr.CUDAPlace(0))]
    cpu, gpu = (np.asarray(g) for g in got)
    assert cpu.dtype == gpu.dtype and cpu.shape == gpu.shape, (cpu, gpu)
    if cpu.dtype.kind == "f":
        np.testing.assert_allclose(gpu, cpu, rtol=1e-6 if cpu.dtype == np.float32 else 1e-12,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(gpu, cpu)
    return gpu


X = np.random.default_rng(0).standard_normal((2, 3, 2, 2)).astype("float32")


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                "reduce_prod"])
@pytest.mark.parametrize("attrs", [{"dim": [0, 2]}, {"dim": [1, -1], "keep_dim": True},
                                   {"reduce_all": True}, {"dim": []}])
def test_dims(op, attrs):
    _both(op, {"X": X}, attrs)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_dtypes_and_keep_dim(dtype):
    x = np.arange(-5, 7).reshape(2, 3, 2).astype(dtype)
    for op in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        _both(op, {"X": x}, {"dim": [0, 2], "keep_dim": True})


def test_zero_d_and_single_element_dims():
    assert _both("reduce_sum", {"X": np.float32(3.5)}, {"dim": [0]}).shape == ()
    assert _both("mean", {"X": X}, {}).shape == ()
    _both("reduce_max", {"X": X[:1, :, :1]}, {"dim": [0, 2]})      # size-1 runs dropped


def test_long_rows_and_nan():
    x = np.random.default_rng(1).standard_normal((2, 150))
    for op in ("reduce_sum", "reduce_max", "reduce_min"):
        _both(op, {"X": x}, {"dim": [1]})
    x[1, 77] = np.nan
    for op in ("reduce_max", "reduce_min", "reduce_sum"):
        out = _both(op, {"X": x}, {"dim": [1]})
        assert np.isnan(out[1]) and not np.isnan(out[0])


def test_block_per_output_paths():
    # More than SHORT reduced elements: a block per output (the short ones: a thread each).
    rng = np.random.default_rng(4)
    x = rng.random((2, 40)) * 0.2 + 0.9
    for op in ("reduce_prod", "reduce_mean"):
        _both(op, {"X": x}, {"dim": [1]})
    _both("reduce_sum", {"X": np.arange(80, dtype="int32").reshape(2, 40)}, {"dim": [1]})
    b = rng.random((2, 40)) < 0.97
    for op in ("reduce_all", "reduce_any"):
        _both(op, {"X": b}, {"dim": [1]})
    g = np.array([1.5, -2.0])
    _both("reduce_prod_grad", {"X": x, "Out@GRAD": g}, {"dim": [1]}, "X@GRAD")
    x[0, 3] = 0.0                     # one zero factor in row 0, two in row 1
    x[1, 5] = x[1, 30] = 0.0
    _both("reduce_prod_grad", {"X": x, "Out@GRAD": g}, {"dim": [1]}, "X@GRAD")


def test_empty():
    x = np.zeros((3, 0), dtype="float32")
    for op in ("reduce_sum", "reduce_prod", "reduce_mean"):
        _both(op, {"X": x}, {"dim": [1]})
    _both("reduce_sum", {"X": x}, {"dim": [0]})
    with pytest.raises(Exception, match="no identity"):
        run_op("reduce_max", {"X": x}, ["Out"], {"dim": [1]}, hr.CUDAPlace(0))


def test_bool_all_any_and_counts():
    b = np.array([[True, False, True], [True, True, True]])
    for op in ("reduce_all", "reduce_any", "reduce_sum"):
        _both(op, {"X": b}, {"dim": [1]})
        _both(op, {"X": b}, {"reduce_all": True})
    _both("reduce_all", {"X": np.zeros((2, 0), dtype=bool)}, {"dim": [1]})


def test_in_out_dtype():
    x = (np.arange(12).reshape(3, 4) * 0.7).astype("float64")
    _both("reduce_sum", {"X": x}, {"dim": [1], "out_dtype": 2})          # int32
    _both("reduce_sum", {"X": x}, {"dim": [0], "in_dtype": 5})           # float32, back
    _both("reduce_sum", {"X": np.arange(6, dtype="int64")}, {"dim": [0], "out_dtype": 6})


@pytest.mark.parametrize("attrs,match", [({"dim": [2]}, "out of range"),
                                         ({"dim": [0, -2]}, "twice")])
def test_bad_dims(attrs, match):
    with pytest.raises(Exception, match=match):
        run_op("reduce_sum", {"X": np.zeros((2, 3), "float32")}, ["Out"], attrs,
               hr.CUDAPlace(0))


def test_dtype_errors():
    with pytest.raises(Exception, match="bool"):
        run_op("reduce_all", {"X": np.zeros(3, "float32")}, ["Out"], {}, hr.CUDAPlace(0))


def _forward(op, x, attrs):
    return run_op(op, {"X": x}, ["Out"], attrs, hr.CPUPlace())["Out"][0].numpy()


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                "reduce_prod"])
@pytest.mark.parametrize("attrs", [{"dim": [0, 2]}, {"dim": [-1], "keep_dim": True},
                                   {"reduce_all": True}])
def test_grads(op, attrs):
    x = np.random.default_rng(2).standard_normal((2, 3, 2))
    x[0, 1, 0] = x[0, 1, 1]          # a tie for max/min
    out = _forward(op, x, attrs)
    g = np.random.default_rng(3).standard_normal(np.shape(out))
    ins = {"X": x, "Out": out, "Out@GRAD": g} if op in ("reduce_max", "reduce_min") else \
        {"X": x, "Out@GRAD": g}
    _both(op + "_grad", ins, attrs, "X@GRAD")


def test_prod_grad_zeros_and_mean_grad():
    x = np.array([[1.5, 0.0, 2.0], [0.0, 3.0, 0.0], [2.0, 4.0, 0.5]], dtype="float32")
    g = np.array([1.0, 2.0, 3.0], dtype="float32")
    _both("reduce_prod_grad", {"X": x, "Out@GRAD": g}, {"dim": [1]}, "X@GRAD")
    _both("mean_grad", {"X": x, "Out@GRAD": np.float32(2.0)}, {}, "X@GRAD")
    with pytest.raises(Exception, match="Out@GRAD"):
        run_op("reduce_sum_grad", {"X": x, "Out@GRAD": g[:2]}, ["X@GRAD"], {"dim": [1]},
               hr.CUDAPlace(0))
