"""The executor's NaN/Inf check (``Executor(check_nan_inf=True)``, ``HEADRACE_CHECK_NAN_INF=1``,
Paddle's ``FLAGS_check_nan_inf=1``): the first op whose output holds a NaN or an Inf stops the
run, named with its block and index, the line that created it and the variable; in a backward
pass the forward op it differentiates is named too. Off (the default), nothing is checked."""
import inspect

import numpy as np
import pytest

import headrace as hr
from headrace.errors import NanInfError


def _line(marker):
    """The line number of this file's line holding ``marker`` (the user's source line)."""
    lines = inspect.getsource(inspect.getmodule(_line)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text and "_line(" not in text)


def _log_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 2], dtype="float32")
        y = hr.layers.scale(x, scale=2.0)
        z = hr.layers.log(y)   # NaN for a negative x
        out = hr.layers.reduce_sum(z)
    return main, startup, z, out


def _sqrt_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 2], dtype="float32")
        w = hr.layers.create_parameter([1, 2], "float32", name="w",
                                       default_initializer=hr.initializer.Constant(1.0))
        r = hr.layers.sqrt(hr.layers.elementwise_mul(x, w))   # sqrt_grad: Inf at 0
        loss = hr.layers.mean(r)
        hr.append_backward(loss)
    return main, startup, loss


def _forward_error(exe):
    main, _, z, out = _log_program()
    with pytest.raises(NanInfError) as info:
        exe.run(main, feed={"x": np.array([[1.0, -1.0]], np.float32)}, fetch_list=[out],
                scope=hr.Scope())
    e = info.value
    assert (e.op_type, e.block_idx, e.op_idx, e.variable) == ("log", 0, 1, z.name)
    assert f"line {_line('NaN for a negative x')}" in e.source
    text = str(e)
    assert text.startswith(f"op 'log' (block 0, op #1): output 'Out' (variable '{z.name}') "
                           f"holds 1 NaN among the 2 values it computed")
    assert "expected: finite float32 values" in text and "nan at [0, 1]" in text
    assert "z = hr.layers.log(y)" in text


def test_forward_nan_names_the_op_through_the_option(monkeypatch):
    monkeypatch.delenv("HEADRACE_CHECK_NAN_INF", raising=False)
    monkeypatch.delenv("FLAGS_check_nan_inf", raising=False)
    _forward_error(hr.Executor(hr.CPUPlace(), check_nan_inf=True))


@pytest.mark.parametrize("env", ["HEADRACE_CHECK_NAN_INF", "FLAGS_check_nan_inf"])
def test_forward_nan_names_the_op_through_the_environment(monkeypatch, env):
    monkeypatch.setenv(env, "1")
    exe = hr.Executor()
    assert exe.check_nan_inf
    _forward_error(exe)


def test_off_by_default_and_when_the_environment_says_0(monkeypatch):
    monkeypatch.setenv("HEADRACE_CHECK_NAN_INF", "0")
    monkeypatch.delenv("FLAGS_check_nan_inf", raising=False)
    main, _, z, out = _log_program()
    for exe in (hr.Executor(), hr.Executor(check_nan_inf=False)):
        assert not exe.check_nan_inf
        (got,) = exe.run(main, feed={"x": np.array([[1.0, -1.0]], np.float32)},
                         fetch_list=[z], scope=hr.Scope())
        assert np.isnan(got[0, 1])
    monkeypatch.setenv("HEADRACE_CHECK_NAN_INF", "1")
    assert not hr.Executor(check_nan_inf=False).check_nan_inf   # the argument wins


def test_switched_on_an_executor_that_already_ran():
    main, _, z, out = _log_program()
    exe, feed = hr.Executor(check_nan_inf=False), {"x": np.array([[1.0, -1.0]], np.float32)}
    exe.run(main, feed=feed, fetch_list=[out], scope=hr.Scope())
    exe.check_nan_inf = True   # the plan prepared unchecked is dropped
    with pytest.raises(NanInfError, match="op 'log'"):
        exe.run(main, feed=feed, fetch_list=[out], scope=hr.Scope())


def test_finite_runs_pass_and_give_the_same_values():
    main, _, z, out = _log_program()
    feed = {"x": np.array([[1.0, 3.0]], np.float32)}
    want = hr.Executor().run(main, feed=feed, fetch_list=[z, out], scope=hr.Scope())
    got = hr.Executor(check_nan_inf=True).run(main, feed=feed, fetch_list=[z, out],
                                              scope=hr.Scope())
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("how", ["option", "env"])
def test_backward_inf_names_the_grad_op_and_its_forward_op(monkeypatch, how):
    monkeypatch.setenv("HEADRACE_CHECK_NAN_INF", "1" if how == "env" else "0")
    main, startup, loss = _sqrt_program()
    exe = hr.Executor(check_nan_inf=True) if how == "option" else hr.Executor()
    scope = hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.array([[4.0, 1.0]], np.float32)}
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)   # finite: runs
    feed = {"x": np.array([[0.0, 1.0]], np.float32)}           # sqrt(0) is finite, its slope not
    with pytest.raises(NanInfError) as info:
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    e = info.value
    sqrt_grad = next(op for op in main.global_block().ops if op.type == "sqrt_grad")
    assert (e.op_type, e.block_idx, e.op_idx) == ("sqrt_grad", 0, sqrt_grad.idx)
    assert e.variable == sqrt_grad.output("X@GRAD")[0]
    assert "holds 1 Inf among the 2 values" in str(e) and "inf at [0, 0]" in str(e)
    assert "hr.append_backward(loss)" in e.source
    assert e.gradient_of.startswith("op 'sqrt' (block 0, op #1), created at:")
    assert f"line {_line('sqrt_grad: Inf at 0')}" in e.gradient_of


def test_a_fed_nan_is_named_before_any_op_runs():
    main, _, _, out = _log_program()
    with pytest.raises(NanInfError) as info:
        hr.Executor(check_nan_inf=True).run(
            main, feed={"x": np.array([[np.inf, 1.0]], np.float32)}, fetch_list=[out],
            scope=hr.Scope())
    e = info.value
    assert (e.op_type, e.op_idx, e.variable) == ("scale", 0, "x")
    assert "input 'X' (variable 'x') holds 1 Inf among the 2 values the run started with" \
        in str(e)


def test_ops_inside_a_while_block_are_checked_one_by_one():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        i = hr.layers.fill_constant([1], "int64", 0)
        v = hr.layers.fill_constant([1], "float32", 1e30)
        limit = hr.layers.fill_constant([1], "int64", 5)

        def body(i, v):
            return hr.layers.increment(i, in_place=False), \
                hr.layers.scale(v, scale=1e5)   # overflows float32 in step 2

        i, v = hr.layers.while_loop(lambda i, v: hr.layers.less_than(i, limit), body, [i, v])
    with pytest.raises(NanInfError) as info:
        hr.Executor(check_nan_inf=True).run(main, fetch_list=[v], scope=hr.Scope())
    e = info.value
    assert (e.op_type, e.block_idx) == ("scale", 1)
    assert f"line {_line('overflows float32 in step 2')}" in e.source
    (got,) = hr.Executor().run(main, fetch_list=[v], scope=hr.Scope())
    assert np.isinf(got).all()   # unchecked, the loop runs on


def test_integer_outputs_and_eval_are_covered():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1], dtype="float32")
        n = hr.layers.cast(x, "int64")
        r = hr.layers.reciprocal(x)
    exe = hr.Executor(check_nan_inf=True)
    feed = {"x": np.array([0.0, 2.0], np.float32)}
    (got,) = exe.eval([n], feed=feed)   # integers are not checked; eval prunes reciprocal away
    np.testing.assert_array_equal(got, [0, 2])
    with pytest.raises(NanInfError, match="op 'reciprocal'"):
        exe.eval([r], feed=feed)


@pytest.mark.cuda
def test_device_outputs_are_checked():
    main, _, z, out = _log_program()
    with pytest.raises(NanInfError) as info:
        hr.Executor(hr.CUDAPlace(0), check_nan_inf=True).run(
            main, feed={"x": np.array([[1.0, 0.0]], np.float32)}, fetch_list=[out],
            scope=hr.Scope())
    assert (info.value.op_type, info.value.variable) == ("log", z.name)
    assert "-inf at [0, 1]" in str(info.value)
