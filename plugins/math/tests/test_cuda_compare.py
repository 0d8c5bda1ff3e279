"""The math plugin's CUDA compare ops (less_than ... not_equal -> bool) against the CPU kernel:
every dtype the CPU kernel takes, Paddle's axis broadcasting (trailing 1s trimmed, X the
smaller operand), NaN and infinities, integer extremes, empty and 0-D tensors, the refusals.
Called directly on tiny arrays (the simulator runs each thread in Python)."""
import numpy as np
import pytest

pytestmark = pytest.mark.cuda
cuda = pytest.importorskip("numba.cuda")

from headrace_math.kernels.cpu import compare as cpu  # noqa: E402
from headrace_math.kernels.cuda import compare as gpu  # noqa: E402

CPU = {t: m for t, m, _ in cpu.KERNELS}
GPU = {t: m for t, m, _ in gpu.KERNELS}
OPS = sorted(GPU)


def _check(op, x, y, attrs=None):
    attrs = attrs or {}
    want = CPU[op](attrs)(x, y)[0]
    got = GPU[op](attrs)(cuda.to_device(x), cuda.to_device(y))[0].copy_to_host()
    assert got.dtype == np.bool_ and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_the_kernels_cover_the_cpu_ops_and_dtypes():
    assert {t: d for t, _, d in gpu.KERNELS} == {t: d for t, _, d in cpu.KERNELS}


@pytest.mark.parametrize("dtype", gpu.DTYPES)
def test_every_dtype(dtype):
    if dtype == "bool":
        x, y = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
    else:
        info = np.finfo(dtype) if dtype[0] == "f" else np.iinfo(dtype)
        x = np.array([info.min, info.max, 0, 1, info.max], dtype)
        y = np.array([info.max, info.max, 0, 0, info.min], dtype)
    for op in OPS:
        _check(op, x, y)


def test_nan_and_infinities():
    x = np.array([np.nan, np.nan, 1.0, np.inf, -np.inf, 0.0], "float32")
    y = np.array([np.nan, 1.0, np.nan, np.inf, np.inf, -0.0], "float32")
    for op in OPS:
        _check(op, x, y)


@pytest.mark.parametrize("xs,ys,axis", [((2, 3, 2), (3,), 1), ((2, 3, 2), (3, 1), 1),
                                        ((3,), (2, 3, 2), 1), ((2, 1, 2), (3, 1), -1),
                                        ((2, 3), (), -1), ((), (), -1), ((0, 3), (3,), -1)])
def test_broadcasting(xs, ys, axis):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, xs).astype("int64")
    y = rng.integers(0, 3, ys).astype("int64")
    for op in ("less_than", "equal"):
        _check(op, x, y, {"axis": axis})


def test_refusals_as_on_the_cpu():
    with pytest.raises(TypeError, match="less_than: X is float32 but Y is float64"):
        GPU["less_than"]({})(cuda.to_device(np.ones(2, "float32")), cuda.to_device(np.ones(2)))
    x, y = np.ones((2, 3)), np.ones(4)
    with pytest.raises(ValueError) as cpu_err:
        CPU["equal"]({})(x, y)
    with pytest.raises(ValueError) as gpu_err:
        GPU["equal"]({})(cuda.to_device(x), cuda.to_device(y))
    assert str(gpu_err.value) == str(cpu_err.value)
