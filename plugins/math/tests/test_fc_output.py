"""fc's CPU kernel reads shapes from the arrays' dims and picks its output itself (FC._output,
common.recycled's rule without the shape tuple): its last result again only when nothing else
holds it and it still fits; its messages still name the shapes."""
import numpy as np
import pytest

from headrace_math.kernels.cpu.fc import FC


def _fc(n=1, act="relu"):
    return FC({"in_num_col_dims": n, "activation_type": act})


def _want(x, w, b, n):
    rows = int(np.prod(x.shape[:n]))
    out = np.maximum(x.reshape(rows, -1) @ w + b, 0)
    return out.reshape(x.shape[:n] + (w.shape[1],))


def test_the_last_result_is_reused_only_when_nobody_holds_it():
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in ((3, 4), (4, 5), (5,)))
    k = _fc()
    (first,) = k(x, w, b)
    kept = first.copy()
    (second,) = k(x * 2, w, b)   # first is held here: a new array, first untouched
    assert second is not first
    np.testing.assert_array_equal(first, kept)
    ident = id(second)
    del second
    (third,) = k(x, w, b)
    assert id(third) == ident   # only the kernel held it: the same array, recomputed
    np.testing.assert_allclose(third, _want(x, w, b, 1), rtol=1e-5, atol=1e-5)
    third.flags.writeable = False   # a read-only result, even unheld, is not written
    ident = id(third)
    del third
    (fourth,) = k(x, w, b)
    assert id(fourth) != ident and fourth.flags.writeable


@pytest.mark.parametrize("shapes", [[((2, 3, 4), 2), ((3, 2, 4), 2)],       # other dims
                                    [((6, 4), 1), ((2, 3, 4), 2)],          # two kernels
                                    [((2, 3, 4), 1), ((2, 12), 1)]])        # K of 2 dims, then 1
def test_an_output_that_no_longer_fits_is_made_anew(shapes):
    rng = np.random.default_rng(1)
    b, ks = np.zeros(5, "float32"), {}
    for xs, n in shapes:
        k = ks.setdefault(n, _fc(n))
        w = rng.standard_normal((int(np.prod(xs[n:])), 5)).astype("float32")
        x = rng.standard_normal(xs).astype("float32")
        (out,) = k(x, w, b)
        assert out.shape == xs[:n] + (5,) and out.flags.c_contiguous
        np.testing.assert_allclose(out, _want(x, w, b, n), rtol=1e-5, atol=1e-5)
        del out


def test_shape_messages_name_the_shapes():
    k = _fc(2)
    with pytest.raises(ValueError, match=r"in_num_col_dims=2 does not fit Input\[3, 4\], or "
                                         r"W\[4, 5\] is not a matrix"):
        k(np.ones((3, 4), "float32"), np.ones((4, 5), "float32"), None)
    with pytest.raises(ValueError, match=r"W\[4\] is not a matrix"):
        _fc(1)(np.ones((3, 4), "float32"), np.ones(4, "float32"), None)
    with pytest.raises(ValueError, match=r"Input\[2, 3, 4\] flattens to \[6, 4\] but W is "
                                         r"\[5, 5\]"):
        k(np.ones((2, 3, 4), "float32"), np.ones((5, 5), "float32"), None)
    with pytest.raises(ValueError, match=r"Bias\[4\] does not hold one value per output "
                                         r"column \(5\)"):
        k(np.ones((2, 3, 4), "float32"), np.ones((4, 5), "float32"), np.ones(4, "float32"))
