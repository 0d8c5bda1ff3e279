"""Fixtures of the control plugin's tests.

``lod_grads``: finite-difference gradient checks of LoD programs (what
``program_gradients`` does, with LoD feeds), shared by the sequence-op tests of this plugin.

The flat program is ``h = x * W`` (x fed with its LoD, W a parameter of x's row shape),
``out = build(block, h)``, ``loss = sum(out * P)`` with P a fixed random tensor shaped like
``out``: P makes the loss depend on where each row ends up, so a gradient routed to the wrong
row shows. W's gradient comes from ``append_backward``, x's from ``gradients``.
"""
import numpy as np
import pytest

import headrace as hr
from headrace.ops.grad import grad_name
from headrace.runtime import Tensor

def _program(x, w, build, p_shape=None):
    prog = hr.Program()
    g = prog.global_block()
    xv = g.create_var(name="x", shape=(-1,) + x.data.shape[1:], dtype="float64",
                      lod_level=len(x.lod), need_check_feed=True)
    wv = g.create_parameter("W", shape=list(w.shape), dtype="float64")
    g.append_op("elementwise_mul", {"X": xv, "Y": wv}, {"Out": "h"}, {"axis": -1})
    out = build(g, g.var("h"))
    if p_shape is None:
        return prog, out, None
    pv = g.create_var(name="P", shape=p_shape, dtype="float64", need_check_feed=True,
                      stop_gradient=True)
    g.append_op("elementwise_mul", {"X": out, "Y": pv}, {"Out": "op"}, {"axis": -1})
    g.append_op("reduce_sum", {"X": "op"}, {"Out": "loss"}, {"reduce_all": True})
    return prog, out, g.var("loss")


def _run(prog, feed, w, fetch):
    scope = hr.Scope()
    scope.set("W", Tensor(w.copy()))
    return hr.Executor().run(prog, feed=feed, fetch_list=fetch, scope=scope,
                             return_numpy=False)


def check_lod_grads(x, build, seed=0, eps=1e-6, rtol=1e-6, atol=1e-8):
    """Check d loss / d W (append_backward) and d loss / d x (gradients) of the flat program
    around ``build(block, h) -> out variable`` against central finite differences; returns
    the forward ``out`` Tensor for the caller's own checks."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 1.5, x.data.shape[1:])
    prog, out, _ = _program(x, w, build)
    (fwd,) = _run(prog, {"x": x}, w, [out])
    p = rng.standard_normal(np.asarray(fwd.numpy()).shape)
    feed = {"x": x, "P": p}

    def loss_at(xd, wd):
        prog, _, loss = _program(x, wd, build, p.shape)
        (v,) = _run(prog, {"x": Tensor(xd, x.lod), "P": p}, wd, [loss])
        return float(np.asarray(v.numpy()).reshape(-1)[0])

    prog, _, loss = _program(x, w, build, p.shape)
    ((param, w_grad),) = hr.append_backward(loss)
    (got_w,) = _run(prog, feed, w, [w_grad])
    prog, _, loss = _program(x, w, build, p.shape)
    (x_grad,) = hr.gradients([loss], [prog.global_block().var("x")])
    assert x_grad is not None, "x got no gradient"
    (got_x,) = _run(prog, feed, w, [x_grad])
    assert x_grad.name == grad_name("x")
    for name, base, got, at in (
            ("W", w, got_w, lambda v: loss_at(x.data, v)),
            ("x", np.asarray(x.data, np.float64), got_x, lambda v: loss_at(v, w))):
        value = base.copy()
        numeric = np.zeros_like(value)
        flat, nflat = value.reshape(-1), numeric.reshape(-1)
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old + eps
            up = at(value)
            flat[k] = old - eps
            down = at(value)
            flat[k] = old
            nflat[k] = (up - down) / (2 * eps)
        np.testing.assert_allclose(np.asarray(got.numpy()), numeric, rtol=rtol, atol=atol,
                                   err_msg=f"analytic vs finite-difference gradient of {name}")
    return fwd


@pytest.fixture
def lod_grads():
    """``lod_grads(x, build)``: :func:`check_lod_grads`."""
    return check_lod_grads
