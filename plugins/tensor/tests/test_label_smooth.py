"""label_smooth: Paddle 3.3.1's numbers (uniform and prior, float32 coefficients), LoD kept,
errors that name the op and the input, and the gradient against finite differences through
the Executor (PriorDist gets none, as in Paddle)."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime import Tensor
from headrace.testing import check_grad, run_op

LABELS = np.array([[0, 1, 0], [1, 0, 0]], np.float32)


def _smooth(x, prior=None, epsilon=0.1):
    inputs = {"X": x} if prior is None else {"X": x, "PriorDist": prior}
    (out,) = run_op("label_smooth", inputs, attrs={"epsilon": epsilon})["Out"]
    return out.numpy()


def test_paddle_numbers():
    # Paddle 3.3.1's label_smooth of LABELS, epsilon 0.1 (float32 values as repr prints them,
    # which round-trip exactly)
    np.testing.assert_array_equal(_smooth(LABELS), np.array(
        [[0.033333335, 0.93333334, 0.033333335], [0.93333334, 0.033333335, 0.033333335]],
        np.float32))
    want = np.array([[0.020000001, 0.92999995, 0.05], [0.91999996, 0.030000001, 0.05]],
                    np.float32)
    for shape in ([1, 3], [3], [3, 1]):          # any shape with one value per class
        prior = np.array([0.2, 0.3, 0.5], np.float32).reshape(shape)
        np.testing.assert_array_equal(_smooth(LABELS, prior), want)
    # ... and in float64, where its coefficients are still float32's
    np.testing.assert_array_equal(_smooth(np.eye(3)[:1]),
                                  [[0.9333333112299442, 0.03333333507180214,
                                    0.03333333507180214]])
    # the op leaves epsilon unchecked (Paddle: 1.5 and -0.5 run)
    np.testing.assert_allclose(_smooth(LABELS[None].astype(np.float64), epsilon=1.5),
                               [[[0.5, 0.0, 0.5], [0.0, 0.5, 0.5]]], atol=1e-7)


def test_float64_uses_paddles_float32_coefficients():
    out = _smooth(LABELS.astype(np.float64), epsilon=0.1)
    keep = float(np.float32(1) - np.float32(0.1))                  # 0.8999999761581421
    add = float(np.float32(0.1) / np.float32(3))
    np.testing.assert_array_equal(out, LABELS.astype(np.float64) * keep + add)


def _program(shape, prior_shape=None, lod_level=0, prior_dtype="float64"):
    prog = hr.Program()
    g = prog.global_block()
    inputs = {"X": g.create_var(name="x", shape=shape, dtype="float64", lod_level=lod_level)}
    if prior_shape is not None:
        inputs["PriorDist"] = g.create_var(name="prior", shape=prior_shape, dtype=prior_dtype)
    out = g.create_var(name="out", dtype="float64")
    g.append_op("label_smooth", inputs, {"Out": out}, {"epsilon": 0.1})
    return prog, out


def test_shape_rule_and_errors():
    _, out = _program([-1, 5], [1, 5])
    assert list(out.shape) == [-1, 5]
    with pytest.raises(hr.HeadraceError, match=r"label_smooth.*input 'PriorDist' \(prior\) "
                                               r"must hold one value per class of X"):
        _program([-1, 5], [1, 4])
    with pytest.raises(hr.HeadraceError, match=r"'PriorDist' \(prior\) must have the dtype"):
        _program([-1, 5], [5], prior_dtype="float32")
    with pytest.raises(hr.HeadraceError, match=r"label_smooth.*'X' \(x\) must have a class "
                                               r"dim"):
        _program([])
    with pytest.raises(hr.HeadraceError, match=r"label_smooth: PriorDist \[2\] must hold one "
                                               r"value per class: X \[2, 3\] has 3"):
        from headrace_tensor.kernels.cpu.label_smooth import LabelSmooth
        try:
            LabelSmooth({"epsilon": 0.1})(LABELS, np.ones(2, np.float32))
        except ValueError as e:
            raise hr.HeadraceError(str(e)) from e


@pytest.mark.parametrize("lod", [[[0, 2]], [[0, 0, 2]], [[0, 0, 0]], [[0, 2, 2], [0, 1, 2]]])
def test_lod_is_kept(lod):
    rows = lod[-1][-1]
    x = Tensor(np.eye(3)[np.arange(rows) % 3], lod)
    prog, out = _program([-1, 3], lod_level=len(lod))
    (got,) = hr.Executor().run(prog, feed={"x": x}, fetch_list=[out], return_numpy=False,
                               scope=hr.Scope())
    assert [list(level) for level in got.lod] == lod
    assert np.asarray(got.data).shape == (rows, 3)


@pytest.mark.parametrize("with_prior", [False, True])
def test_gradient_matches_finite_differences(with_prior):
    rng = np.random.default_rng(0)
    inputs = {"X": rng.random((2, 3, 4))}
    if with_prior:
        inputs["PriorDist"] = rng.random((1, 4))
    check_grad("label_smooth", inputs, wrt=["X"], attrs={"epsilon": 0.2})
