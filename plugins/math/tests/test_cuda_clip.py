"""Edge cases of the math plugin's CUDA clip family (the reference samples run in
tests/test_cuda_ops.py): attribute and tensor bounds, integer X with float bounds, NaN, values
at the bounds, crossed bounds raised from the device flag, unwanted gradients, reductions over
more elements than the first launch has threads, the norm's eps path, empty tensors; all
against the CPU kernels, called directly on tiny arrays (the simulator runs each thread in
Python)."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op

pytestmark = pytest.mark.cuda
cuda = pytest.importorskip("numba.cuda")

from headrace_math.kernels.cpu import clip as cpu  # noqa: E402
from headrace_math.kernels.cuda import clip as gpu  # noqa: E402

CPU = {t: m for t, m, _ in cpu.KERNELS}
GPU = {t: m for t, m, _ in gpu.KERNELS}
FLT_MAX = 3.4028234663852886e38


def _run(kernel, *arrays):
    dev = [None if a is None else cuda.to_device(a) for a in arrays]
    return [None if o is None else o.copy_to_host() for o in kernel(*dev)]


def _both(op, attrs, *arrays, info=None):
    want = CPU[op](attrs, info)(*arrays)
    got = _run(GPU[op](attrs, info), *arrays)
    return got, want


def _equal(got, want, rtol=0):
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0)


X = np.array([-1e30, -3.5, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.5, 1e30, np.inf, -np.inf,
              np.nan])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lo,hi", [(-1.0, 2.0), (-FLT_MAX, FLT_MAX), (0.5, 0.5)])
def test_clip_by_attributes(dtype, lo, hi):
    got, want = _both("clip", {"min": lo, "max": hi}, X.astype(dtype))
    _equal(got, want)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_x_truncates_the_float_bounds(dtype):
    x = np.arange(-6, 7, dtype=dtype)
    for lo, hi in [(-2.7, 3.9), (-1e20, 1e20), (-0.5, 0.5)]:
        got, want = _both("clip", {"min": lo, "max": hi}, x)
        _equal(got, want)
    big = np.array([np.iinfo(dtype).min, 0, np.iinfo(dtype).max], dtype)
    _equal(*_both("clip", {"min": -1e30, "max": 1e30}, big))


@pytest.mark.parametrize("shape", [(1,), ()])
def test_tensor_bounds_override_the_attributes(shape):
    x = X.astype("float32")
    attrs = {"min": -100.0, "max": 100.0}
    mn, mx = np.full(shape, -1.0, "float32"), np.full(shape, 0.75, "float32")
    _equal(*_both("clip", attrs, x, mn, None))
    _equal(*_both("clip", attrs, x, None, mx))
    _equal(*_both("clip", attrs, x, mn, mx))
    xi = np.arange(-4, 5, dtype="int64")
    _equal(*_both("clip", attrs, xi, np.full(shape, -2, "int64"), np.full(shape, 3, "int64")))


def test_crossed_bounds_are_refused_as_on_the_cpu():
    x = np.zeros(3)
    with pytest.raises(ValueError, match="clip: the lower bound 3.0 exceeds the upper bound "
                                         "1.0"):
        _run(GPU["clip"]({"min": -1.0, "max": 1.0}, None), x, np.array([3.0]), None)
    with pytest.raises(ValueError, match="clip: the lower bound 2.0 exceeds the upper bound "
                                         "-1.0"):
        _run(GPU["clip"]({"min": 2.0, "max": 5.0}, None), x, None, np.array([-1.0]))
    with pytest.raises(ValueError, match="clip: the lower bound 2.0 exceeds the upper bound "
                                         "1.0"):
        GPU["clip"]({"min": 2.0, "max": 1.0}, None)(cuda.to_device(x))
    with pytest.raises(ValueError, match="clip_grad: the lower bound 3.0 exceeds"):
        _run(GPU["clip_grad"]({"min": -1.0, "max": 1.0}, None), x, np.array([3.0]),
             np.array([2.0]), x)
    with pytest.raises(ValueError, match="'Min' must hold one element"):
        _run(GPU["clip"]({"min": -1.0, "max": 1.0}, None), x, np.zeros(2), None)
    with pytest.raises(TypeError, match="clip: X has dtype bool"):
        _run(GPU["clip"]({"min": -1.0, "max": 1.0}, None), np.zeros(2, bool), None, None)


def test_crossed_tensor_bounds_inside_a_run_name_the_op():
    with pytest.raises(Exception, match="lower bound 3.0 exceeds"):
        run_op("clip", {"X": np.zeros(3), "Min": np.array([3.0]), "Max": np.array([1.0])},
               ["Out"], {}, hr.CUDAPlace(0))


# 150: more elements than the first launch's threads in the simulator.
@pytest.mark.parametrize("dtype,n", [("float32", 14), ("float64", 14), ("float32", 150)])
def test_clip_grad_matches_the_cpu_kernel(dtype, n):
    rng = np.random.default_rng(n)
    x = (np.resize(X[:-1], n) * rng.uniform(0.5, 1.5, n)).astype(dtype)
    x[:4] = [-1.0, 0.75, -1.0, 0.75]                      # at the bounds: no gradient
    d = rng.standard_normal(n).astype(dtype)
    attrs = {"min": -5.0, "max": 5.0}
    for mn, mx in [(np.array([-1.0], dtype), np.array([0.75], dtype)),
                   (None, np.array(0.75, dtype)), (None, None)]:
        got, want = _both("clip_grad", attrs, x, mn, mx, d)
        _equal(got, want, rtol=1e-6 if dtype == "float32" else 1e-13)


class _Wants:
    def __init__(self, *slots):
        self.slots = slots

    def wants(self, slot):
        return slot in self.slots


@pytest.mark.parametrize("wanted", [("Min@GRAD",), ("X@GRAD", "Max@GRAD"), ()])
def test_clip_grad_writes_only_what_is_wanted(wanted):
    x = np.linspace(-2, 2, 9)
    d = np.arange(9.0)
    got, want = _both("clip_grad", {"min": 0.0, "max": 0.0}, x, np.array([-1.0]),
                      np.array([1.0]), d, info=_Wants(*wanted))
    _equal(got, want, rtol=1e-13)


def test_empty_tensors():
    e = np.zeros((0, 3), "float32")
    _equal(*_both("clip", {"min": -1.0, "max": 1.0}, e, np.array([0.0], "float32"), None))
    _equal(*_both("clip_grad", {"min": -1.0, "max": 1.0}, e, np.array([0.0], "float32"),
                  np.array([1.0], "float32"), e))
    _equal(*_both("clip_by_norm", {"max_norm": 1.0}, e))
    _equal(*_both("squared_l2_norm", {}, e))
    _equal(*_both("squared_l2_norm_grad", {}, e, np.ones(1, "float32")))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x,max_norm", [
    (np.arange(-5.0, 6.0), 2.0),           # scaled down
    (np.arange(-5.0, 6.0), 100.0),         # norm below max_norm: unchanged
    (np.zeros(4), 1.0),                    # zero norm
    (np.full(3, 1e-32), 1e-33),            # norm <= 1e-30 above max_norm: the eps path
    (np.linspace(-3, 3, 150), 1.5),        # more elements than the first launch's threads
    (np.array(7.0), 1.0),                  # 0-D
])
def test_clip_by_norm_and_squared_l2_norm_match_the_cpu_kernel(dtype, x, max_norm):
    x = x.astype(dtype)
    rtol = 1e-6 if dtype == "float32" else 1e-13
    _equal(*_both("clip_by_norm", {"max_norm": max_norm}, x), rtol=rtol)
    _equal(*_both("squared_l2_norm", {}, x), rtol=rtol)
    for g in (np.array([0.75], dtype), np.array(-3.0, dtype)):
        _equal(*_both("squared_l2_norm_grad", {}, x, g))


def test_norm_refusals_match_the_cpu_kernel():
    x = np.ones(3)
    with pytest.raises(TypeError, match="squared_l2_norm: X has dtype int64"):
        _run(GPU["squared_l2_norm"]({}, None), np.ones(3, "int64"))
    with pytest.raises(TypeError, match="clip_by_norm: X has dtype int32"):
        _run(GPU["clip_by_norm"]({"max_norm": 1.0}, None), np.ones(3, "int32"))
    with pytest.raises(ValueError, match="Out@GRAD has shape \\[2\\], expected one element"):
        _run(GPU["squared_l2_norm_grad"]({}, None), x, np.ones(2))
    with pytest.raises(TypeError, match="Out@GRAD has dtype float32, expected X's float64"):
        _run(GPU["squared_l2_norm_grad"]({}, None), x, np.ones(1, "float32"))
