"""The float32 row loops of _rows.h (layer_norm, its gradient, softmax and its gradient along
the last axis) against the float64 kernels on the same values: row widths below, at and past
the 16 partial sums (tails of every length), with and without Scale/Bias, and NaN/inf rows."""
import numpy as np
import pytest

WIDTHS = [1, 5, 16, 17, 31, 64, 256, 1000]


def _ln(kernel, dtype, grad=False):
    attrs = {"epsilon": 1e-5, "begin_norm_axis": 1}
    return kernel("layer_norm_grad" if grad else "layer_norm", attrs, dtype)


@pytest.mark.parametrize("n", WIDTHS)
@pytest.mark.parametrize("scale, shift", [(True, True), (True, False), (False, True),
                                          (False, False)])
def test_layer_norm_f32_rows_match_float64(kernel, n, scale, shift):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((7, n)) * 3 + 2).astype(np.float32)
    s = rng.standard_normal(n).astype(np.float32) if scale else None
    b = rng.standard_normal(n).astype(np.float32) if shift else None
    dy = rng.standard_normal((7, n)).astype(np.float32)
    wide = [None if v is None else v.astype(np.float64) for v in (x, s, b, dy)]
    y, mean, var = _ln(kernel, "float32")(x, s, b)
    y64, mean64, var64 = _ln(kernel, "float64")(*wide[:3])
    assert y.dtype == mean.dtype == var.dtype == np.float32
    np.testing.assert_allclose(mean, mean64, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(var, var64, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, y64, rtol=1e-4, atol=1e-4)
    dx, ds, db = _ln(kernel, "float32", True)(x, s, b, mean, var, dy)
    dx64, ds64, db64 = _ln(kernel, "float64", True)(*wide[:3], mean64, var64, wide[3])
    np.testing.assert_allclose(dx, dx64, rtol=1e-3, atol=2e-4 * max(1.0, np.sqrt(n)))
    for got, want in ((ds, ds64), (db, db64)):
        assert (got is None) == (want is None)
        if got is not None:
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_layer_norm_f32_constant_row_is_the_bias(kernel):
    x = np.full((2, 33), 7.25, np.float32)
    b = np.arange(33, dtype=np.float32)
    y, mean, var = _ln(kernel, "float32")(x, None, b)
    np.testing.assert_array_equal(mean, [7.25, 7.25])
    np.testing.assert_array_equal(var, [0, 0])
    np.testing.assert_array_equal(y, np.broadcast_to(b, (2, 33)))


@pytest.mark.parametrize("n", WIDTHS)
def test_softmax_f32_rows_match_float64(kernel, n):
    rng = np.random.default_rng(n + 100)
    x = (rng.standard_normal((5, n)) * 6).astype(np.float32)
    x[0, n // 2] = 80.0   # one large value, last in no 16-block in particular
    dy = rng.standard_normal((5, n)).astype(np.float32)
    (y,) = kernel("softmax", {"axis": -1}, "float32")(x)
    (y64,) = kernel("softmax", {"axis": -1}, "float64")(x.astype(np.float64))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, y64, rtol=2e-6, atol=1e-9)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)
    (dx,) = kernel("softmax_grad", {"axis": -1}, "float32")(y, dy)
    (dx64,) = kernel("softmax_grad", {"axis": -1}, "float64")(y64, dy.astype(np.float64))
    np.testing.assert_allclose(dx, dx64, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("row", [[1.0, np.nan, 2.0] + [0.0] * 17, [np.nan] + [1.0] * 20,
                                 [-np.inf] + [0.0] * 18, [np.inf, 0.0, 1.0]])
def test_softmax_f32_special_values_as_float64(kernel, row):
    x = np.array([row], np.float32)
    (y,) = kernel("softmax", {"axis": -1}, "float32")(x)
    (y64,) = kernel("softmax", {"axis": -1}, "float64")(x.astype(np.float64))
    np.testing.assert_allclose(y, y64, rtol=2e-6, atol=1e-9, equal_nan=True)
