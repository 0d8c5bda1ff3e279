"""The core works with any single plugin beside it, or none (issue 7, item 1).

Each program is built against an isolated registry of the core and one first-party plugin
(nothing else loaded): ``append_backward`` emits only the core's ops (fill_constant, sum, scale,
fill_zeros_like, assign) besides the plugin's grad ops, ``Executor.run`` runs it, and the loss
and a parameter gradient match NumPy. headrace-optim's test minimizes with SGD instead;
headrace-control's ops have no gradients, so its test runs a forward program.
"""
import numpy as np
import pytest

import headrace as hr
import headrace_control.plugin
import headrace_math.plugin
import headrace_nn.plugin
import headrace_optim.plugin
import headrace_tensor.plugin
from headrace import layers
from headrace.core_ops.plugin import NAME as CORE
from headrace.errors import UnknownOpError
from headrace.initializer import Constant
from headrace.ops import build_registry, registry_guard
from headrace.param_attr import ParamAttr

CORE_OPS = {"feed", "fetch", "fill_constant", "fill_zeros_like", "fill_any_like", "sum", "scale",
            "assign", "print"}


def _only(name=None, plugin=None):
    """A registry of the core plus ``plugin`` (None: the core alone)."""
    reg = build_registry(plugins=[(name, plugin)] if plugin else [], autoload=False)
    assert not reg.failed, reg.failed
    assert reg.plugins == [CORE] + ([name] if plugin else [])
    return reg


def _built(reg, build):
    """``build()`` run inside fresh main/startup programs of ``reg``; -> (main, startup, out)."""
    with registry_guard(reg), hr.unique_name.guard():
        main, startup = hr.Program(registry=reg), hr.Program(registry=reg)
        with hr.program_guard(main, startup):
            out = build()
    assert main.registry is reg and startup.registry is reg
    return main, startup, out


def _run(main, startup, feed, fetch, params=None):
    """Run ``startup``, overwrite ``params`` (name -> array) in the scope, run ``main``."""
    scope, exe = hr.Scope(), hr.Executor()
    exe.run(startup, scope=scope)
    for name, value in (params or {}).items():
        scope.set(name, hr.Tensor(value))
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def _backward_types(main):
    return {op.type for op in main.global_block().ops}


# -- the core alone -------------------------------------------------------------------------

def test_the_core_alone_registers_its_ops_with_kernels():
    reg = _only()
    assert set(reg) == CORE_OPS and reg.ops_of(CORE) == sorted(CORE_OPS)
    for t in CORE_OPS - {"feed", "fetch"}:
        assert "cpu" in reg.kernels_for(t), t
    assert reg.get("feed").no_kernel and reg.get("fetch").no_kernel
    with pytest.raises(UnknownOpError, match="mul"):
        reg.get("mul")


def test_the_core_alone_runs_feed_fill_constant_scale_sum_and_assign():
    reg = _only()

    def build():
        x = layers.data("x", shape=[3], dtype="float64", append_batch_size=False)
        w = layers.create_parameter([3], "float64", name="w",
                                    default_initializer=Constant(0.5))
        c = layers.fill_constant([3], "float64", 2.0)
        y = layers.scale(w, scale=3.0, bias=1.0)        # 3w + 1
        s = layers.sums([y, x, w, c])                   # 4w + x + 3
        out = layers.assign(s)
        return x, w, out
    main, startup, (x, w, out) = _built(reg, build)
    assert {op.type for op in main.global_block().ops} <= CORE_OPS
    xv = np.array([1.0, -2.0, 0.25])
    wv = np.array([0.1, 0.2, 0.3])
    (got,) = _run(main, startup, {"x": xv}, [out], {"w": wv})
    np.testing.assert_allclose(got, 4 * wv + xv + 3)


def test_the_core_alone_append_backward_through_scale_and_sum():
    reg = _only()

    def build():
        w = layers.create_parameter([1], "float64", name="w", default_initializer=Constant(1.5))
        y = layers.scale(w, scale=3.0, bias=1.0)        # 3w + 1
        loss = layers.sums([y, w, y])                   # 7w + 2 (w read twice: grads summed)
        pairs = hr.append_backward(loss)
        return loss, pairs
    main, startup, (loss, pairs) = _built(reg, build)
    assert _backward_types(main) <= CORE_OPS
    ((param, grad),) = pairs
    assert param.name == "w"
    got_loss, got_grad = _run(main, startup, {}, [loss, grad])
    np.testing.assert_allclose(got_loss, [7 * 1.5 + 2])
    np.testing.assert_allclose(got_grad, [7.0])


# -- the core and headrace-math -------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_core_and_math_mlp_backward(dtype):
    reg = _only("headrace-math:math", headrace_math.plugin)

    def build():
        x = layers.data("x", shape=[4], dtype=dtype)
        # The weights' default initializer (Xavier: uniform_random) is headrace-tensor's: they
        # get a core one; their values are overwritten before the run anyway.
        h = layers.fc(x, 5, act="relu", param_attr=ParamAttr(name="w1", initializer=Constant()),
                      bias_attr=ParamAttr(name="b1", initializer=Constant(0.5)))
        o = layers.fc(h, 2, param_attr=ParamAttr(name="w2", initializer=Constant()),
                      bias_attr=False)
        loss = layers.mean(o)
        return loss, hr.append_backward(loss)
    main, startup, (loss, pairs) = _built(reg, build)
    assert _backward_types(main) - set(reg.ops_of("headrace-math:math")) <= CORE_OPS
    grads = {p.name: g for p, g in pairs}
    assert sorted(grads) == ["b1", "w1", "w2"]

    rng = np.random.default_rng(0)
    xv = rng.standard_normal((6, 4)).astype(dtype)
    w1, w2 = rng.standard_normal((4, 5)).astype(dtype), rng.standard_normal((5, 2)).astype(dtype)
    got_loss, g_w1, g_b1 = _run(main, startup, {"x": xv}, [loss, grads["w1"], grads["b1"]],
                                {"w1": w1, "w2": w2})
    pre = xv.astype(np.float64) @ w1 + 0.5  # (0.5: exact as the float32 attribute)
    h = np.maximum(pre, 0)
    o = h @ w2
    do = np.full(o.shape, 1.0 / o.size)
    dpre = (do @ w2.T) * (pre > 0)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got_loss, [o.mean()], rtol=tol)
    np.testing.assert_allclose(g_w1, xv.T @ dpre, rtol=tol, atol=tol)
    np.testing.assert_allclose(g_b1, dpre.sum(0), rtol=tol, atol=tol)


def test_an_op_of_a_plugin_not_installed_is_an_unknown_op_naming_it():
    # fc's default weight initializer (Xavier) emits uniform_random, headrace-tensor's.
    reg = _only("headrace-math:math", headrace_math.plugin)
    with pytest.raises(UnknownOpError, match="uniform_random"):
        _built(reg, lambda: layers.fc(layers.data("x", shape=[4]), 5))


# -- the core and headrace-tensor -----------------------------------------------------------

def test_core_and_tensor_backward_through_transpose_split_and_reshape():
    reg = _only("headrace-tensor:tensor", headrace_tensor.plugin)
    factors = [1.0, -2.0, 0.5]

    def build():
        w = layers.create_parameter([3, 1], "float64", name="w",
                                    default_initializer=Constant(0.0))
        parts = layers.split(layers.transpose(w, [1, 0]), 3, dim=1)     # three [1, 1]
        total = layers.sums([layers.scale(p, scale=f) for p, f in zip(parts, factors)])
        loss = layers.reshape(total, [1])                               # w . factors
        return loss, hr.append_backward(loss)
    main, startup, (loss, pairs) = _built(reg, build)
    assert _backward_types(main) - set(reg.ops_of("headrace-tensor:tensor")) <= CORE_OPS
    ((param, grad),) = pairs
    wv = np.array([[0.25], [1.5], [-4.0]])
    got_loss, got_grad = _run(main, startup, {}, [loss, grad], {"w": wv})
    np.testing.assert_allclose(got_loss, [wv[:, 0] @ factors])
    np.testing.assert_allclose(got_grad, np.array(factors).reshape(3, 1))


# -- the core and headrace-nn ---------------------------------------------------------------

def test_core_and_nn_backward_through_softmax_with_cross_entropy():
    reg = _only("headrace-nn:nn", headrace_nn.plugin)

    def build():
        w = layers.create_parameter([4], "float64", name="w", default_initializer=Constant(0.0))
        label = layers.data("label", shape=[1], dtype="int64", append_batch_size=False)
        logits = layers.sums([w, layers.scale(w, scale=2.0)])           # 3w
        loss = layers.softmax_with_cross_entropy(logits, label)         # shape [1]
        return loss, hr.append_backward(loss)
    main, startup, (loss, pairs) = _built(reg, build)
    assert _backward_types(main) - set(reg.ops_of("headrace-nn:nn")) <= CORE_OPS
    ((param, grad),) = pairs
    wv = np.array([0.1, 0.5, -1.0, 2.0])
    got_loss, got_grad = _run(main, startup, {"label": np.array([2])}, [loss, grad], {"w": wv})
    z = 3 * wv
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(got_loss, [-np.log(p[2])], rtol=1e-12)
    np.testing.assert_allclose(got_grad, 3 * (p - np.eye(4)[2]), rtol=1e-12, atol=1e-15)


# -- the core and headrace-optim ------------------------------------------------------------

def test_core_and_optim_sgd_minimize():
    # The loss is made of core ops only; SGD adds its learning rate (fill_constant in the
    # startup program) and the sgd update (headrace-optim).
    reg = _only("headrace-optim:optim", headrace_optim.plugin)

    def build():
        w = layers.create_parameter([1], "float64", name="w", default_initializer=Constant(1.0))
        x = layers.data("x", shape=[1], dtype="float64", append_batch_size=False)
        loss = layers.sums([layers.scale(w, scale=3.0), x])             # 3w + x
        _, params_grads = hr.optimizer.SGD(learning_rate=0.25).minimize(loss)
        return w, loss, params_grads
    main, startup, (w, loss, params_grads) = _built(reg, build)
    assert {op.type for op in startup.global_block().ops} <= CORE_OPS
    assert "sgd" in _backward_types(main) and _backward_types(main) - {"sgd"} <= CORE_OPS
    ((param, grad),) = params_grads
    scope, exe = hr.Scope(), hr.Executor()
    exe.run(startup, scope=scope)
    for step in range(3):
        got_loss, got_grad = exe.run(main, feed={"x": np.array([0.5])}, fetch_list=[loss, grad],
                                     scope=scope)
        w_before = 1.0 - 0.25 * 3.0 * step
        np.testing.assert_allclose(got_loss, [3 * w_before + 0.5])
        np.testing.assert_allclose(got_grad, [3.0])
    np.testing.assert_allclose(np.asarray(scope.get("w").data), [1.0 - 0.25 * 3.0 * 3])


# -- the core and headrace-control -----------------------------------------------------------

def test_core_and_control_run_tensor_arrays():
    # headrace-control's ops have no gradients, and its loops compare with headrace-math's
    # less_than: alone beside the core, a program of its tensor-array ops and the core's runs.
    reg = _only("headrace-control:control", headrace_control.plugin)

    def build():
        x = layers.data("x", shape=[2], dtype="float64", append_batch_size=False)
        i = layers.fill_constant([1], "int64", 0)
        arr = layers.array_write(x, i)
        layers.increment(i)
        layers.array_write(layers.scale(x, scale=3.0), i, array=arr)
        first = layers.array_read(arr, layers.fill_constant([1], "int64", 0))
        return i, layers.sums([first, layers.array_read(arr, i)])
    main, startup, (i, out) = _built(reg, build)
    assert {op.type for op in main.global_block().ops} - CORE_OPS == {
        "write_to_array", "increment", "read_from_array"}
    got_out, got_i = _run(main, startup, {"x": np.array([1.0, -2.0])}, [out, i])
    np.testing.assert_allclose(got_out, [4.0, -8.0])
    assert got_i.tolist() == [1]

# -- the command line -----------------------------------------------------------------------

def test_headrace_plugins_and_ops_show_the_core_plugin():
    import io

    from headrace.cli import main as cli_main
    with registry_guard(_only("headrace-math:math", headrace_math.plugin)):
        out = io.StringIO()
        assert cli_main(["plugins"], out=out) == 0
        lines = out.getvalue().splitlines()
        assert lines[0] == f"{CORE}: 9 ops, devices cpu, cuda"
        assert lines[1].startswith("headrace-math:math: ")
        out = io.StringIO()
        assert cli_main(["ops", "--brief"], out=out) == 0
    listed = {line.split()[0]: line for line in out.getvalue().splitlines() if "[plugin" in line}
    assert {t for t, line in listed.items() if f"[plugin {CORE}]" in line} == CORE_OPS
    assert listed["mul"].startswith("mul  [plugin headrace-math:math]")
