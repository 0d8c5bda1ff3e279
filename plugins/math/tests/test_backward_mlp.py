"""append_backward through a small MLP built op by op (mul -> elementwise_add(axis=1) -> relu
-> mul -> mean): the parameter gradients against NumPy's hand-written backward pass, and
PyTorch's autograd where it is installed."""
import numpy as np
import pytest

import headrace
from headrace.runtime import Executor, Scope, Tensor

SHAPES = {"w1": (6, 5), "b1": (5,), "w2": (5, 3)}


def _program(dtype):
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="x", shape=[-1, 6], dtype=dtype, need_check_feed=True)
    for name, shape in SHAPES.items():
        block.create_parameter(name, list(shape), dtype=dtype)
    block.append_op("mul", {"X": "x", "Y": "w1"}, {"Out": "h"},
                    {"x_num_col_dims": 1, "y_num_col_dims": 1})
    block.append_op("elementwise_add", {"X": "h", "Y": "b1"}, {"Out": "hb"}, {"axis": 1})
    block.append_op("relu", {"X": "hb"}, {"Out": "a"})
    block.append_op("mul", {"X": "a", "Y": "w2"}, {"Out": "o"})
    block.append_op("mean", {"X": "o"}, {"Out": "loss"})
    return prog, block


def _values(dtype, seed=0):
    rng = np.random.default_rng(seed)
    vals = {n: rng.standard_normal(s).astype(dtype) for n, s in SHAPES.items()}
    vals["x"] = rng.standard_normal((8, 6)).astype(dtype)
    return vals


def _numpy_grads(v):
    """The MLP's backward pass by hand, in float64."""
    x, w1, b1, w2 = (v[k].astype(np.float64) for k in ("x", "w1", "b1", "w2"))
    hb = x @ w1 + b1
    a = np.maximum(hb, 0)
    o = a @ w2
    do = np.full(o.shape, 1.0 / o.size)
    dw2 = a.T @ do
    dhb = (do @ w2.T) * (hb > 0)
    return {"w1": x.T @ dhb, "b1": dhb.sum(0), "w2": dw2}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mlp_parameter_gradients(dtype):
    prog, block = _program(dtype)
    pairs = headrace.append_backward(block.var("loss"))
    assert sorted(p.name for p, _ in pairs) == ["b1", "w1", "w2"]
    types = [op.type for op in block.ops]
    for t in ("mul_grad", "elementwise_add_grad", "relu_grad", "mean_grad"):
        assert t in types, types
    v = _values(dtype)
    scope = Scope()
    for name in SHAPES:
        scope.set(name, Tensor(v[name]))
    grads = dict(zip([p.name for p, _ in pairs],
                     Executor().run(prog, feed={"x": v["x"]}, fetch_list=[g for _, g in pairs],
                                    scope=scope)))
    expected = _numpy_grads(v)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for name, exp in expected.items():
        assert grads[name].shape == SHAPES[name] and grads[name].dtype == np.dtype(dtype)
        np.testing.assert_allclose(grads[name], exp, rtol=tol, atol=tol, err_msg=name)


def test_mlp_gradients_match_torch():
    try:
        import torch
    except ImportError:        # the NumPy comparison above stands alone
        return
    prog, block = _program("float64")
    pairs = headrace.append_backward(block.var("loss"))
    v = _values("float64", seed=1)
    scope = Scope()
    for name in SHAPES:
        scope.set(name, Tensor(v[name]))
    got = Executor().run(prog, feed={"x": v["x"]}, fetch_list=[g for _, g in pairs],
                         scope=scope)
    t = {k: torch.tensor(a, requires_grad=k != "x") for k, a in v.items()}
    loss = (torch.relu(t["x"] @ t["w1"] + t["b1"]) @ t["w2"]).mean()
    loss.backward()
    for (p, _), g in zip(pairs, got):
        np.testing.assert_allclose(g, t[p.name].grad.numpy(), rtol=1e-12, atol=1e-12)


def test_input_gradient_through_the_mlp():
    # gradients() w.r.t. the data: mul_grad's X@GRAD path (unused by the parameters' pass).
    prog, block = _program("float64")
    (dx,) = headrace.gradients([block.var("loss")], [block.var("x")])
    v = _values("float64", seed=2)
    scope = Scope()
    for name in SHAPES:
        scope.set(name, Tensor(v[name]))
    (got,) = Executor().run(prog, feed={"x": v["x"]}, fetch_list=[dx], scope=scope)
    hb = v["x"] @ v["w1"] + v["b1"]
    do = np.full((8, 3), 1.0 / 24)
    np.testing.assert_allclose(got, ((do @ v["w2"].T) * (hb > 0)) @ v["w1"].T, rtol=1e-12)
