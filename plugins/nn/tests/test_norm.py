"""norm (l2_normalize): against torch.nn.functional.normalize (float64, outputs and
gradients), finite differences, and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_matches_torch_and_finite_differences(axis):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3, 4], dtype="float64", append_batch_size=False)
        x.stop_gradient = False
        y = layers.l2_normalize(x, axis)
        loss = layers.mean(layers.elementwise_mul(y, layers.tanh(y)))
        hr.gradients(loss, [x])
    xv = np.random.default_rng(0).standard_normal((3, 4))
    got, gx = hr.Executor().run(main, feed={"x": xv}, fetch_list=[y, "x@GRAD"],
                                scope=hr.Scope())
    xt = torch.from_numpy(xv).requires_grad_()
    yt = torch.nn.functional.normalize(xt, dim=axis, eps=0)
    (yt * torch.tanh(yt)).mean().backward()
    np.testing.assert_allclose(got, yt.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-6, atol=1e-10)
    analytic, numeric = program_gradients(main, startup, loss, ["x"], {"x": xv})
    np.testing.assert_allclose(analytic["x"], numeric["x"], rtol=1e-6, atol=1e-8)


def test_bad_axis():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[3, 4], dtype="float64", append_batch_size=False)
        with pytest.raises(hr.HeadraceError, match="axis"):
            layers.l2_normalize(x, 2)
