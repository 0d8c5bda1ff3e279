"""lstm_unit / gru_unit and their gradients on CUDAPlace (Numba's simulator without a GPU)
against the CPU kernels: large gate magnitudes (the sigmoid must not overflow), zero rows,
an absent output gradient (zeros). Shapes stay tiny: the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op

pytestmark = pytest.mark.cuda


def _same(op, inputs, outputs, attrs, tol):
    got = [run_op(op, inputs, outputs, attrs, place)
           for place in (hr.CPUPlace(), hr.CUDAPlace(0))]
    cpu, gpu = ({s: np.asarray(v[0].numpy()) for s, v in g.items()} for g in got)
    for slot in outputs:
        assert gpu[slot].dtype == cpu[slot].dtype and gpu[slot].shape == cpu[slot].shape
        np.testing.assert_allclose(gpu[slot], cpu[slot], rtol=tol, atol=tol, err_msg=slot)
    return cpu


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [3, 0])
def test_lstm_unit_and_grad(dtype, n):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((n, 8)) * 4).astype(dtype)
    if n:
        x[0, :2] = [800, -800]                      # exp(-v) would overflow
    c_prev = rng.standard_normal((n, 2)).astype(dtype)
    attrs = {"forget_bias": 0.5}
    tol = 1e-5 if dtype == "float32" else 1e-12
    out = _same("lstm_unit", {"X": x, "C_prev": c_prev}, ["C", "H"], attrs, tol)
    dc = rng.standard_normal((n, 2)).astype(dtype)
    dh = rng.standard_normal((n, 2)).astype(dtype)
    base = {"X": x, "C_prev": c_prev, "C": out["C"]}
    _same("lstm_unit_grad", {**base, "C@GRAD": dc, "H@GRAD": dh}, ["X@GRAD", "C_prev@GRAD"],
          attrs, tol)


def test_lstm_unit_kernel_refuses_mismatched_shapes_and_takes_absent_grads():
    from numba import cuda

    from headrace_nn.kernels.cuda.lstm_unit import LstmUnit, LstmUnitGrad
    with pytest.raises(ValueError, match=r"X must be \[N, 4D\] for C_prev \[N, D\]"):
        LstmUnit({"forget_bias": 0.0})(cuda.to_device(np.ones((2, 7))),
                                       cuda.to_device(np.ones((2, 2))))
    x, c = cuda.to_device(np.ones((2, 8))), cuda.to_device(np.ones((2, 2)))
    dx, dc = LstmUnitGrad({"forget_bias": 0.0})(x, c, c, None, None)   # zeros for both
    assert not dx.copy_to_host().any() and not dc.copy_to_host().any()


@pytest.mark.parametrize("act, gate, origin, bias", [(2, 1, False, True), (3, 1, True, False),
                                                     (1, 3, False, True), (0, 2, True, True)])
@pytest.mark.parametrize("n", [3, 0])
def test_gru_unit_and_grad(act, gate, origin, bias, n):
    rng = np.random.default_rng(1)
    d = 3
    ins = {"Input": rng.standard_normal((n, 3 * d)) * 2,
           "HiddenPrev": rng.standard_normal((n, d)),
           "Weight": rng.standard_normal((d, 3 * d)) * 0.5,
           "Bias": rng.standard_normal((1, 3 * d)) if bias else None}
    attrs = {"activation": act, "gate_activation": gate, "origin_mode": origin}
    out = _same("gru_unit", ins, ["Gate", "ResetHiddenPrev", "Hidden"], attrs, 1e-12)
    grads = ["Input@GRAD", "HiddenPrev@GRAD", "Weight@GRAD"] + (["Bias@GRAD"] if bias else [])
    _same("gru_unit_grad", {**ins, "Gate": out["Gate"], "ResetHiddenPrev":
                            out["ResetHiddenPrev"],
                            "Hidden@GRAD": rng.standard_normal((n, d))}, grads, attrs, 1e-12)
