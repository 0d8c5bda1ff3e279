"""layer_norm: against torch.nn.functional.layer_norm (float64, outputs and gradients), finite
differences through the Executor, the layer's parameters, and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients

torch = pytest.importorskip("torch")


def _program(shape, axis, scale=True, shift=True):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=shape, dtype="float64", append_batch_size=False)
        x.stop_gradient = False
        y = layers.layer_norm(x, scale=scale, shift=shift, begin_norm_axis=axis,
                              param_attr=hr.ParamAttr(name="S"), bias_attr=hr.ParamAttr(name="B"))
        loss = layers.mean(layers.elementwise_mul(y, layers.tanh(y)))
        hr.gradients(loss, [x] + main.all_parameters())
    return main, startup, x, y, loss


@pytest.mark.parametrize("shape, axis", [([4, 6], 1), ([2, 3, 5], 1), ([2, 3, 5], 2)])
def test_matches_torch(shape, axis):
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(shape)
    right = int(np.prod(shape[axis:]))
    s, b = rng.standard_normal(right), rng.standard_normal(right)
    main, startup, x, y, loss = _program(shape, axis)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    scope.set("S", hr.Tensor(s.copy()))
    scope.set("B", hr.Tensor(b.copy()))
    got, gx, gs, gb = exe.run(main, feed={"x": xv}, fetch_list=[y, "x@GRAD", "S@GRAD", "B@GRAD"],
                              scope=scope)
    xt = torch.from_numpy(xv).requires_grad_()
    st = torch.from_numpy(s.reshape(shape[axis:])).requires_grad_()
    bt = torch.from_numpy(b.reshape(shape[axis:])).requires_grad_()
    yt = torch.nn.functional.layer_norm(xt, shape[axis:], st, bt, eps=1e-5)
    (yt * torch.tanh(yt)).mean().backward()
    np.testing.assert_allclose(got, yt.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(gs, st.grad.numpy().reshape(-1), rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(gb, bt.grad.numpy().reshape(-1), rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("scale, shift", [(True, False), (False, True), (False, False)])
def test_gradients_equal_finite_differences(scale, shift):
    main, startup, _, _, loss = _program([3, 4], 1, scale, shift)
    names = ["x"] + (["S"] if scale else []) + (["B"] if shift else [])
    rng = np.random.default_rng(1)
    values = {n: rng.standard_normal(4) for n in ("S", "B") if n in names}
    analytic, numeric = program_gradients(main, startup, loss, names,
                                          {"x": rng.standard_normal((3, 4))}, values=values)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_parameters_start_as_ones_and_zeros_and_errors():
    main, startup, _, _, _ = _program([2, 3], 1)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    assert scope.get("S").numpy().tolist() == [1.0] * 3
    assert scope.get("B").numpy().tolist() == [0.0] * 3
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[2, 3], dtype="float64", append_batch_size=False)
        with pytest.raises(hr.HeadraceError, match="begin_norm_axis"):
            layers.layer_norm(x, begin_norm_axis=2)
