"""Edge cases of the math plugin's CUDA elementwise family (the reference samples run in
tests/test_cuda_ops.py): Paddle's axis broadcasting (trailing 1s trimmed, operands on either
side), empty and 0-D tensors, integer dtypes (truncating division, INT_MIN / -1, a 0 divisor
raised from the device flag), NaN in max/min, and every gradient against the CPU kernel,
reduced over broadcast dims, with unwanted gradients skipped. Called directly on tiny arrays
(the simulator runs each thread in Python)."""
import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.cuda
cuda = pytest.importorskip("numba.cuda")

from headrace_math.kernels.cpu import elementwise as cpu  # noqa: E402
from headrace_math.kernels.cuda import elementwise as gpu  # noqa: E402
from headrace_math.kernels.cuda import elementwise_grad as gpu_grad  # noqa: E402

CPU = {t: m for t, m, _ in cpu.KERNELS}
GPU = {t: m for t, m, _ in gpu.KERNELS + gpu_grad.KERNELS}
OPS = ["add", "sub", "mul", "div", "max", "min", "pow"]

# (X shape, Y shape, axis): equal, trailing, Paddle's axis in the middle, Y's trailing 1s
# trimmed, X the smaller operand, both broadcast, a 0-D operand, a reduction longer than a block.
# Each case runs in one dtype (float64 for the even ones): every block of a reduction is 64
# simulated threads.
SHAPES = [((2, 3), (2, 3), -1), ((2, 3, 2), (3,), 1), ((2, 3, 2), (3, 1), 1),
          ((3,), (2, 3, 2), 1), ((2, 1, 2), (3, 1), -1), ((2, 3), (), -1), ((), (), -1),
          ((70, 1), (1,), -1)]


class _Wants:
    def __init__(self, *slots):
        self.slots = slots

    def wants(self, slot):
        return slot in self.slots

    def may_alias(self, a, b):
        return False


def _run(kernel, *arrays):
    dev = [cuda.to_device(a) for a in arrays]
    return [None if o is None else o.copy_to_host() for o in kernel(*dev)]


def _same(got, want, rtol):
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True)


def _data(shape, dtype, seed, low=0.5):
    v = np.random.default_rng(seed).uniform(low, 2.0, shape)
    return np.asarray(v * np.where(np.arange(v.size).reshape(shape) % 3 == 0, -1, 1)
                      if low < 0 else v).astype(dtype)


@pytest.mark.parametrize("xs,ys,axis", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_forward_and_grad_match_the_cpu(op, xs, ys, axis):
    name = "elementwise_" + op
    attrs = {"axis": axis}
    for dtype in ("float64" if SHAPES.index((xs, ys, axis)) % 2 == 0 else "float32",):
        x, y = _data(xs, dtype, 1), _data(ys, dtype, 2)
        out = CPU[name](attrs)(x, y)[0]
        _same(_run(GPU[name](attrs), x, y), [out], 1e-6 if dtype == "float32" else 1e-13)
        d = _data(out.shape, dtype, 3, low=-2.0)
        args = (x, y, out, d) if op == "div" else (x, y, d)
        _same(_run(GPU[name + "_grad"](attrs), *args), CPU[name + "_grad"](attrs)(*args),
              1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("xs,ys", [((0, 3), (3,)), ((2, 0), (2, 1)), ((0,), (0,))])
@pytest.mark.parametrize("op", ["add", "mul", "div"])
def test_empty(op, xs, ys):
    name = "elementwise_" + op
    x, y = np.ones(xs), np.ones(ys)
    out = CPU[name]({})(x, y)[0]
    _same(_run(GPU[name]({}), x, y), [out], 0)
    d = np.ones(out.shape)
    args = (x, y, out, d) if op == "div" else (x, y, d)
    # An operand broadcast over an empty dim gets a gradient of zeros.
    _same(_run(GPU[name + "_grad"]({}), *args), CPU[name + "_grad"]({})(*args), 0)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min"])
def test_integers(op, dtype):
    name = "elementwise_" + op
    lo = np.iinfo(dtype).min
    x = np.array([[7, -7, 7, -7, lo, 5, 0, 9]], dtype)
    y = np.array([2, 2, -2, -2, -1, 1, 3, -4], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the simulator's scalars warn of the wraparound
        _same(_run(GPU[name]({}), x, y), CPU[name]({})(x, y), 0)
        # broadcast along Paddle's axis too
        _same(_run(GPU[name]({"axis": 1}), x.reshape(1, 8, 1), y),
              CPU[name]({"axis": 1})(x.reshape(1, 8, 1), y), 0)


def test_integer_division_by_zero_is_refused():
    x = np.array([1, 2, 3], "int32")
    y = np.array([1, 0, 3], "int32")
    with pytest.raises(ValueError) as cpu_err:
        CPU["elementwise_div"]({})(x, y)
    with pytest.raises(ValueError) as gpu_err:
        _run(GPU["elementwise_div"]({}), x, y)
    assert str(gpu_err.value) == str(cpu_err.value)


def test_pow_refuses_integers_and_mixed_dtypes_are_refused():
    with pytest.raises(TypeError, match="elementwise_pow: dtype int32"):
        _run(GPU["elementwise_pow"]({}), np.ones(2, "int32"), np.ones(2, "int32"))
    with pytest.raises(TypeError, match="X is float32 but Y is float64"):
        _run(GPU["elementwise_add"]({}), np.ones(2, "float32"), np.ones(2))


@pytest.mark.parametrize("xs,ys,axis", [((2, 3), (4,), -1), ((2, 3, 4), (4,), 0),
                                        ((2, 3, 4), (3, 1, 2), 1)])
def test_bad_broadcasts_are_refused_as_on_the_cpu(xs, ys, axis):
    x, y = np.ones(xs), np.ones(ys)
    for op in ("elementwise_add", "elementwise_mul_grad"):
        args = (x, y) if op[-4:] != "grad" else (x, y, np.ones(xs))
        with pytest.raises(ValueError) as cpu_err:
            CPU[op]({"axis": axis})(*args)
        with pytest.raises(ValueError) as gpu_err:
            _run(GPU[op]({"axis": axis}), *args)
        assert str(gpu_err.value) == str(cpu_err.value)


def test_max_min_nan_and_ties():
    x = np.array([np.nan, 1.0, 2.0, 3.0, np.nan])
    y = np.array([1.0, np.nan, 2.0, 1.0, np.nan])
    d = np.arange(1.0, 6.0)
    for op in ("elementwise_max", "elementwise_min"):
        _same(_run(GPU[op]({}), x, y), CPU[op]({})(x, y), 0)
        _same(_run(GPU[op + "_grad"]({}), x, y, d), CPU[op + "_grad"]({})(x, y, d), 0)


def test_pow_grad_at_zero_and_negative_bases():
    x = np.array([0.0, -2.0, 2.0, -8.0])
    y = np.array([2.0, 3.0, 0.5, 1.0 / 3])
    out = CPU["elementwise_pow"]({})(x, y)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(_run(GPU["elementwise_pow"]({}), x, y), [out], 1e-14)
        d = np.ones(4)
        _same(_run(GPU["elementwise_pow_grad"]({}), x, y, d),
              CPU["elementwise_pow_grad"]({})(x, y, d), 1e-14)


@pytest.mark.parametrize("wanted", [("X@GRAD",), ("Y@GRAD",), ()])
@pytest.mark.parametrize("op", ["add", "sub", "div"])
def test_grad_writes_only_what_is_wanted(op, wanted):
    name = "elementwise_" + op + "_grad"
    x, y = _data((2, 3), "float64", 1), _data((3,), "float64", 2)
    d = _data((2, 3), "float64", 3)
    args = (x, y, x / y, d) if op == "div" else (x, y, d)
    info = _Wants(*wanted)
    _same(_run(GPU[name]({}, info), *args), CPU[name]({}, info)(*args), 1e-13)


def test_add_grad_passes_out_grad_through_when_aliasing_is_allowed():
    class Alias(_Wants):
        def may_alias(self, a, b):
            return True
    g = cuda.to_device(np.arange(6.0).reshape(2, 3))
    dx, dy = GPU["elementwise_add_grad"]({}, Alias("X@GRAD", "Y@GRAD"))(
        cuda.to_device(np.ones((2, 3))), cuda.to_device(np.ones((2, 3))), g)
    assert dx is g and dy is g
    dx, _ = GPU["elementwise_add_grad"]({}, _Wants("X@GRAD"))(
        cuda.to_device(np.ones((2, 3))), cuda.to_device(np.ones((2, 3))), g)
    assert dx is not g
    np.testing.assert_array_equal(dx.copy_to_host(), g.copy_to_host())
