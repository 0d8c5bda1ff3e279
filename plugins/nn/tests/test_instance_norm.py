"""instance_norm: against torch.nn.functional.instance_norm (float64, outputs and gradients),
finite differences, and Paddle's SavedVariance (the inverse standard deviation)."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients, run_op

torch = pytest.importorskip("torch")


def test_matches_torch_and_finite_differences():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((2, 3, 4, 2))
    s, b = rng.standard_normal(3), rng.standard_normal(3)
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[2, 3, 4, 2], dtype="float64", append_batch_size=False)
        x.stop_gradient = False
        y = layers.instance_norm(x, param_attr=hr.ParamAttr(name="S"),
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
    yt = torch.nn.functional.instance_norm(xt, weight=st, bias=bt, eps=1e-5)
    (yt * torch.tanh(yt)).mean().backward()
    np.testing.assert_allclose(got, yt.detach().numpy(), atol=1e-10)
    for mine, theirs in ((gx, xt), (gs, st), (gb, bt)):
        np.testing.assert_allclose(mine, theirs.grad.numpy(), rtol=1e-6, atol=1e-10)
    analytic, numeric = program_gradients(main, startup, loss, ["x", "S"], {"x": xv},
                                          values={"S": s, "B": b})
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_saved_variance_is_the_inverse_std():
    x = np.random.default_rng(1).standard_normal((2, 2, 5))
    res = run_op("instance_norm", {"X": x}, attrs={"epsilon": 1e-5})
    inv = np.asarray(res["SavedVariance"][0].data)
    np.testing.assert_allclose(inv, 1 / np.sqrt(x.reshape(4, 5).var(axis=1) + 1e-5),
                               rtol=1e-6)
