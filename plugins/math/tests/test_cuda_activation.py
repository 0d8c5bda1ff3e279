"""Edge cases of the math plugin's CUDA activations and their gradients (the reference samples
run in tests/test_cuda_ops.py): every op against the CPU kernel on large magnitudes, zeros of
both signs, inf and NaN, with non-default attributes; empty and 0-D tensors; the refusals.
The kernels are called directly (no program build) on tiny arrays: the simulator runs each
thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op

pytestmark = pytest.mark.cuda
cuda = pytest.importorskip("numba.cuda")

from headrace_math.kernels.cpu import activation as cpu  # noqa: E402
from headrace_math.kernels.cuda import activation as gpu  # noqa: E402
from headrace_math.ops.activation import ACTIVATIONS, GRAD_USES  # noqa: E402

DEFAULTS = {t: {name: default for name, default, *_ in specs} for t, _, specs in ACTIVATIONS}
CPU = {t: m for t, m, _ in cpu.KERNELS}
GPU = {t: m for t, m, _ in gpu.KERNELS}

# (op, attrs overriding the defaults): every attribute moved off its default at least once.
CASES = [(t, {}) for t in DEFAULTS] + [
    ("leaky_relu", {"alpha": 0.3}), ("softplus", {"beta": 2.0, "threshold": 3.0}),
    ("softplus", {"beta": -1.5, "threshold": 20.0}), ("gelu", {"approximate": True}),
    ("relu6", {"threshold": 2.0}), ("relu6", {"threshold": -1.0}), ("elu", {"alpha": 0.4}),
    ("hard_sigmoid", {"slope": 0.7, "offset": 0.1}), ("swish", {"beta": 2.5}),
    ("swish", {"beta": -0.5}), ("round", {"decimals": 2}), ("round", {"decimals": -1}),
]

# Large magnitudes (exp's overflow, sigmoid's split, softplus' linear regime, gelu's tails),
# signed zeros, half-way points for round, inf and NaN.
X = np.array([-1e300, -800.0, -30.0, -2.5, -1.5, -0.5, -1e-3, -0.0, 0.0, 1e-3, 0.5, 0.125,
              1.5, 2.5, 3.7, 30.0, 700.0, 800.0, 1e300, np.inf, -np.inf, np.nan])
# Domains where the op is real: the others would compare NaN with NaN, which says little.
POSITIVE = {"log", "sqrt", "rsqrt"}


def _x(op, dtype):
    x = np.abs(X) if op in POSITIVE else X
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def _tol(dtype):
    # float32: the CPU's exp-based fast paths are a few float32 ulp off the double evaluation.
    return dict(rtol=2e-6, atol=1e-30) if dtype == "float32" else dict(rtol=1e-13, atol=0)


def _on_gpu(fn, *arrays):
    return [o.copy_to_host() for o in fn(*[cuda.to_device(a) for a in arrays])]


def _same(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, **_tol(dtype))
    # Signed zeros too (allclose sees -0.0 == 0.0); float64 only: the CPU's float32 fast
    # paths (tanh) give -0.0 as +0.0.
    zero = want == 0
    if dtype == "float64":
        assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op,attrs", CASES, ids=[f"{t}-{a}" for t, a in CASES])
def test_forward_and_gradient_match_the_cpu_kernel(op, attrs, dtype):
    attrs = {**DEFAULTS[op], **attrs}
    x = _x(op, dtype)
    with np.errstate(all="ignore"):
        (want,) = CPU[op](attrs, None)(x)
    (got,) = _on_gpu(GPU[op](attrs, None), x)
    _same(got, want, dtype)

    d = np.random.default_rng(3).standard_normal(x.shape).astype(dtype)
    reads = GRAD_USES[op]
    args = (d,) if reads is None else ((x if reads == "X" else want), d)
    with np.errstate(all="ignore"):
        (gwant,) = CPU[op + "_grad"](attrs, None)(*args)
    (ggot,) = _on_gpu(GPU[op + "_grad"](attrs, None), *args)
    _same(ggot, gwant, dtype)


def test_round_is_half_away_from_zero():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.3, 0.49999999999999994, 2.0 ** 52 + 1, 1e300])
    (got,) = _on_gpu(GPU["round"]({"decimals": 0}, None), x)
    np.testing.assert_array_equal(got, [1, 2, 3, -1, -3, -0.0, 0, 2.0 ** 52 + 1, 1e300])
    assert np.signbit(got[5])
    (got,) = _on_gpu(GPU["round"]({"decimals": 1}, None), np.array([0.25, -0.35, 1e307]))
    np.testing.assert_allclose(got, [0.3, -0.4, 1e307])    # 1e308 would overflow x * 10: kept


@pytest.mark.parametrize("op", sorted(DEFAULTS))
def test_empty_and_0d_tensors(op):
    attrs = DEFAULTS[op]
    reads = GRAD_USES[op]
    for shape in [(0, 3), ()]:
        x = np.full(shape, 0.75, np.float32)
        (out,) = _on_gpu(GPU[op](attrs, None), x)
        (want,) = CPU[op](attrs, None)(x)
        assert out.shape == shape and out.dtype == np.float32
        np.testing.assert_allclose(out, want, rtol=2e-6)
        args = (x,) if reads is None else (x, x)
        (g,) = _on_gpu(GPU[op + "_grad"](attrs, None), *args)
        (gwant,) = CPU[op + "_grad"](attrs, None)(*args)
        assert g.shape == shape
        np.testing.assert_allclose(g, gwant, rtol=2e-6)


def test_refusals_match_the_cpu_kernel():
    with pytest.raises(ValueError, match="beta must be nonzero"):
        GPU["softplus"]({"beta": 0.0, "threshold": 20.0}, None)
    with pytest.raises(TypeError, match="relu: X has dtype int32"):
        GPU["relu"]({}, None)(cuda.to_device(np.zeros(3, np.int32)))
    g = GPU["tanh_grad"]({}, None)
    with pytest.raises(ValueError, match="tanh_grad: Out@GRAD has shape"):
        g(cuda.to_device(np.zeros(3)), cuda.to_device(np.zeros(4)))
    with pytest.raises(TypeError, match="tanh_grad: Out@GRAD is float32"):
        g(cuda.to_device(np.zeros(3)), cuda.to_device(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="floor_grad: takes Out@GRAD only"):
        GPU["floor_grad"]({}, None)(cuda.to_device(np.zeros(3)), cuda.to_device(np.zeros(3)))


@pytest.mark.parametrize("op,attrs", [("gelu", {"approximate": True}), ("swish", {"beta": 2.0}),
                                      ("ceil", {})])
def test_through_the_executor(op, attrs):
    # The op as a program runs it: attrs filled by the executor, the grad's slots in order.
    x = np.linspace(-3, 3, 7).reshape(1, 7)
    out = [run_op(op, {"X": x}, ["Out"], attrs, p)["Out"][0].numpy()
           for p in (hr.CPUPlace(), hr.CUDAPlace(0))]
    np.testing.assert_allclose(out[1], out[0], rtol=1e-13)
    reads = GRAD_USES[op]
    ins = {"Out@GRAD": np.ones_like(x)}
    if reads:
        ins[reads] = x
    grads = [run_op(op + "_grad", ins, ["X@GRAD"], attrs, p)["X@GRAD"][0].numpy()
             for p in (hr.CPUPlace(), hr.CUDAPlace(0))]
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-13)
