"""The math plugin's CUDA logical ops against the CPU kernel: the truth tables, NumPy
broadcasting (no axis), empty and 0-D tensors, and the refusal of a non-bool operand. Called
directly on tiny arrays (the simulator runs each thread in Python)."""
import numpy as np
import pytest

pytestmark = pytest.mark.cuda
cuda = pytest.importorskip("numba.cuda")

from headrace_math.kernels.cpu import logical as cpu  # noqa: E402
from headrace_math.kernels.cuda import logical as gpu  # noqa: E402

CPU = {t: m for t, m, _ in cpu.KERNELS}
GPU = {t: m for t, m, _ in gpu.KERNELS}
BINARY = ["logical_and", "logical_or", "logical_xor"]


def _check(op, *arrays):
    want = CPU[op]({})(*arrays)[0]
    got = GPU[op]({})(*[cuda.to_device(a) for a in arrays])[0].copy_to_host()
    assert got.dtype == np.bool_ and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_the_kernels_cover_the_cpu_ops():
    assert {t: d for t, _, d in gpu.KERNELS} == {t: d for t, _, d in cpu.KERNELS}


@pytest.mark.parametrize("op", BINARY)
def test_truth_table(op):
    _check(op, np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool))


@pytest.mark.parametrize("xs,ys", [((2, 3), (3,)), ((2, 1, 2), (3, 1)), ((3,), (2, 3)),
                                   ((2, 3), ()), ((), ()), ((0, 3), (1, 3))])
def test_broadcasting(xs, ys):
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 2, xs).astype(bool), rng.integers(0, 2, ys).astype(bool)
    for op in BINARY:
        _check(op, x, y)


@pytest.mark.parametrize("shape", [(2, 3), (), (0,)])
def test_not(shape):
    _check("logical_not", np.random.default_rng(1).integers(0, 2, shape).astype(bool))


def test_refusals_as_on_the_cpu():
    x, b = np.ones(2, "int32"), np.ones(2, bool)
    for op, args in (("logical_and", (b, x)), ("logical_not", (x,))):
        with pytest.raises(TypeError) as cpu_err:
            CPU[op]({})(*args)
        with pytest.raises(TypeError) as gpu_err:
            GPU[op]({})(*[cuda.to_device(a) for a in args])
        assert str(gpu_err.value) == str(cpu_err.value)
    with pytest.raises(ValueError) as cpu_err:
        CPU["logical_or"]({})(np.ones((2, 3), bool), np.ones(2, bool))
    with pytest.raises(ValueError) as gpu_err:
        GPU["logical_or"]({})(cuda.to_device(np.ones((2, 3), bool)),
                              cuda.to_device(np.ones(2, bool)))
    assert str(gpu_err.value) == str(cpu_err.value)
