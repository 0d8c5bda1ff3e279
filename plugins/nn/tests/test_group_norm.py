"""group_norm: against torch.nn.functional.group_norm (float64, outputs and gradients),
finite differences, the layer's parameters, and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape, groups", [([2, 6, 3, 2], 3), ([3, 4, 5], 1), ([2, 4], 4)])
def test_matches_torch(shape, groups):
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(shape)
    s, b = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=shape, dtype="float64", append_batch_size=False)
        x.stop_gradient = False
        y = layers.group_norm(x, groups, param_attr=hr.ParamAttr(name="S"),
                              bias_attr=hr.ParamAttr(name="B"))
        loss = layers.mean(layers.elementwise_mul(y, layers.tanh(y)))
        hr.gradients(loss, [x] + main.all_parameters())
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    scope.set("S", hr.Tensor(s.copy()))
    scope.set("B", hr.Tensor(b.copy()))
    got, gx, gs, gb = exe.run(main, feed={"x": xv}, fetch_list=[y, "x@GRAD", "S@GRAD", "B@GRAD"],
                              scope=scope)
    xt, st, bt = (torch.from_numpy(v).requires_grad_() for v in (xv, s, b))
    yt = torch.nn.functional.group_norm(xt, groups, st, bt, eps=1e-5)
    (yt * torch.tanh(yt)).mean().backward()
    np.testing.assert_allclose(got, yt.detach().numpy(), atol=1e-10)
    for mine, theirs in ((gx, xt), (gs, st), (gb, bt)):
        np.testing.assert_allclose(mine, theirs.grad.numpy(), rtol=1e-6, atol=1e-10)
    analytic, numeric = program_gradients(main, startup, loss, ["x", "S", "B"], {"x": xv},
                                          values={"S": s, "B": b})
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_groups_must_divide_the_channels():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[2, 6, 3], dtype="float64", append_batch_size=False)
        with pytest.raises(hr.HeadraceError, match="groups \\(4\\) must divide the 6 channels"):
            layers.group_norm(x, 4)
