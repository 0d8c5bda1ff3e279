"""Loop layers: While (with block()), while_loop, array_length; forward, against Python."""
import numpy as np
import pytest

import headrace as hr
from headrace import LayerError, layers
from headrace.testing import op_types, run_programs


def counter(value):
    return layers.fill_constant([1], "int64", value)


def test_counter_loop_sums_values(progs):
    main, startup = progs
    x = layers.data("x", [4], dtype="float32", append_batch_size=False)
    i, n = counter(0), layers.data("n", [1], dtype="int64", append_batch_size=False)
    total = layers.fill_constant([4], "float32", 0.0)
    cond = layers.less_than(i, n)
    loop = layers.While(cond)
    with loop.block():
        step = layers.cast(i, "float32")
        layers.assign(layers.elementwise_add(total, layers.elementwise_mul(x, step)), total)
        layers.increment(i)
        layers.less_than(i, n, cond=cond)
    op = main.global_block().ops[-1]
    assert op.type == "while" and op.attr("sub_block").parent_idx == 0
    assert set(op.input("X")) == {x.name, i.name, n.name, total.name}
    assert op.input("Condition") == [cond.name]
    assert op.output("Out")[0] == cond.name and set(op.output("Out")) == \
        {cond.name, total.name, i.name}
    assert main.global_block().var(op.output("StepScopes")[0]).kind == "step_scopes"
    xv = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    for nv in (0, 1, 5):
        got, iv = run_programs(main, startup, {"x": xv, "n": np.array([nv], np.int64)},
                               [total, i])
        np.testing.assert_allclose(got, xv * sum(range(nv)), rtol=1e-6)
        assert iv[0] == nv


def test_zero_iteration_loop_leaves_its_outputs(progs):
    main, startup = progs
    i, n = counter(3), counter(2)
    acc = layers.fill_constant([1], "float32", 7.0)
    cond = layers.less_than(i, n)
    with layers.While(cond).block():
        layers.assign(layers.scale(acc, scale=2.0), acc)
        layers.increment(i)
        layers.less_than(i, n, cond=cond)
    got, iv, c = run_programs(main, startup, {}, [acc, i, cond])
    assert got[0] == 7.0 and iv[0] == 3 and not c[0]


def test_array_written_in_a_loop_and_its_length(progs):
    main, startup = progs
    x = layers.data("x", [3], dtype="float32", append_batch_size=False)
    i, n = counter(0), layers.data("n", [1], dtype="int64", append_batch_size=False)
    arr = layers.create_array("float32")
    cond = layers.less_than(i, n)
    with layers.While(cond).block():
        layers.array_write(x, i, array=arr)
        layers.assign(layers.scale(x, scale=2.0), x)
        layers.increment(i)
        layers.less_than(i, n, cond=cond)
    length = layers.array_length(arr)
    last = layers.array_read(arr, layers.elementwise_sub(length, counter(1)))
    assert length.dtype == "int64" and tuple(length.shape) == (1,)
    xv = np.array([1.0, 2.0, -1.0], np.float32)
    ln, lv, a = run_programs(main, startup, {"x": xv, "n": np.array([4], np.int64)},
                             [length, last, arr])
    assert ln[0] == 4 and ln.dtype == np.int64
    np.testing.assert_allclose(lv, xv * 8)
    assert [t.numpy().tolist() for t in a] == [(xv * 2 ** k).tolist() for k in range(4)]
    # a loop that runs no step leaves the array unwritten: length 0
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    ln = exe.eval(length, feed={"x": xv, "n": np.array([0], np.int64)}, scope=scope)
    assert ln[0] == 0


def test_nested_while(progs):
    # for a in range(m): for b in range(a + 1): s += a * b
    main, startup = progs
    m = layers.data("m", [1], dtype="int64", append_batch_size=False)
    a, s = counter(0), layers.fill_constant([1], "int64", 0)
    c_out = layers.less_than(a, m)
    with layers.While(c_out).block():
        b = counter(0)
        a1 = layers.elementwise_add(a, counter(1))
        c_in = layers.less_than(b, a1)
        with layers.While(c_in).block():
            layers.assign(layers.elementwise_add(s, layers.elementwise_mul(a, b)), s)
            layers.increment(b)
            layers.less_than(b, a1, cond=c_in)
        layers.increment(a)
        layers.less_than(a, m, cond=c_out)
    outer = main.global_block().ops[-1]
    (inner,) = [o for o in outer.attr("sub_block").ops if o.type == "while"]
    assert inner.type == "while" and inner.attr("sub_block").parent_idx == outer.attr(
        "sub_block").idx
    # the inner loop's reads of outer names reach the outer while's X
    assert {a.name, s.name, m.name} <= set(outer.input("X"))
    assert s.name in outer.output("Out") and s.name in inner.output("Out")
    for mv in (0, 1, 4):
        (got,) = run_programs(main, startup, {"m": np.array([mv], np.int64)}, [s])
        assert got[0] == sum(x * y for x in range(mv) for y in range(x + 1))


def collatz_steps(v):
    k = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        k += 1
    return k


def test_while_loop_collatz_step_count(progs):
    # float64 holds these integers exactly; the loop stops when v reaches 1 (data-dependent).
    main, startup = progs
    v = layers.data("v", [1], dtype="float64", append_batch_size=False)
    k = layers.fill_constant([1], "int64", 0)

    def cond(v, k):
        return layers.not_equal(v, 1.0)

    def body(v, k):
        half = layers.floor(layers.scale(v, scale=0.5))
        odd = layers.elementwise_sub(v, layers.scale(half, scale=2.0))     # v mod 2
        up = layers.scale(v, scale=3.0, bias=1.0)
        nxt = layers.elementwise_add(layers.elementwise_mul(odd, up),
                                     layers.elementwise_mul(layers.scale(odd, -1.0, 1.0), half))
        return nxt, layers.increment(k, in_place=False)

    out = layers.while_loop(cond, body, [v, k])
    assert out[0] is v and out[1] is k
    for start in (1, 6, 27, 97):
        got_v, got_k = run_programs(main, startup, {"v": np.array([start], np.float64)}, out)
        assert got_v[0] == 1 and got_k[0] == collatz_steps(start)


def test_while_loop_newton_square_root(progs):
    main, startup = progs
    a = layers.data("a", [1], dtype="float64", append_batch_size=False)
    x = layers.assign(a)
    n = layers.fill_constant([1], "int64", 0)

    def cond(x, n):
        err = layers.abs(layers.elementwise_sub(layers.elementwise_mul(x, x), a))
        return layers.greater_than(err, 1e-9)

    def body(x, n):
        nxt = layers.scale(layers.elementwise_add(x, layers.elementwise_div(a, x)), scale=0.5)
        return [nxt, layers.increment(n, in_place=False)]

    out = layers.while_loop(cond, body, (x, n))
    for av in (1.0, 2.0, 1e6):
        got, steps = run_programs(main, startup, {"a": np.array([av])}, out)
        xv, k = av, 0
        while abs(xv * xv - av) > 1e-9:
            xv, k = 0.5 * (xv + av / xv), k + 1
        assert got[0] == xv and steps[0] == k
        np.testing.assert_allclose(got[0], np.sqrt(av), rtol=1e-9)


def test_while_loop_keeps_a_tensor_array_loop_var(progs):
    main, startup = progs
    i, arr = counter(0), layers.create_array("int64")

    def body(i, arr):
        layers.array_write(i, i, array=arr)
        return layers.increment(i, in_place=False), arr

    i, arr = layers.while_loop(lambda i, arr: layers.less_than(i, counter(3)), body, [i, arr])
    got, length = run_programs(main, startup, {}, [arr, layers.array_length(arr)])
    assert [t.numpy()[0] for t in got] == [0, 1, 2] and length[0] == 3


def test_while_loop_argument_errors(progs):
    i = counter(0)
    lt = lambda i: layers.less_than(i, counter(3))   # noqa: E731
    with pytest.raises(LayerError, match="'cond' must be callable"):
        layers.while_loop(1, lambda i: i, [i])
    with pytest.raises(LayerError, match="'body' must be callable"):
        layers.while_loop(lt, None, [i])
    with pytest.raises(LayerError, match="'loop_vars' must be a non-empty list"):
        layers.while_loop(lt, lambda i: i, [])
    with pytest.raises(LayerError, match=r"loop_vars\[0\] must be a Variable"):
        layers.while_loop(lt, lambda i: i, [3])
    with pytest.raises(LayerError, match="as many values as loop_vars"):
        layers.while_loop(lt, lambda i: [i, i], [i])
    with pytest.raises(LayerError, match="must be a Variable of dtype|unsupported dtype|bool"):
        layers.while_loop(lambda i: i, lambda i: i, [i])


def test_while_refuses_a_bad_condition_and_a_second_body(progs):
    with pytest.raises(LayerError, match="While: argument 'cond'"):
        layers.While(counter(0))
    with pytest.raises(LayerError, match="one element"):
        layers.While(layers.data("c2", [2], dtype="bool", append_batch_size=False))
    i = counter(0)
    cond = layers.less_than(i, counter(3))
    loop = layers.While(cond)
    with loop.block():
        layers.increment(i)
        layers.less_than(i, counter(3), cond=cond)
    with pytest.raises(LayerError, match="block\\(\\) was already used"):
        with loop.block():
            pass


def test_an_error_inside_the_body_restores_the_current_block(progs):
    main, _ = progs
    cond = layers.less_than(counter(0), counter(3))
    with pytest.raises(ZeroDivisionError):
        with layers.While(cond).block():
            1 / 0
    assert main.current_block().idx == 0 and "while" not in op_types(main)


def test_endless_layer_loop_is_stopped_at_its_line(progs):
    import headrace_control
    main, startup = progs
    i = counter(0)
    cond = layers.greater_equal(i, counter(0))
    with layers.While(cond).block():
        layers.increment(i)
        layers.greater_equal(i, counter(0), cond=cond)
    old = headrace_control.set_max_while_steps(20)
    try:
        with pytest.raises(hr.OpError, match="ran 20 steps") as info:
            run_programs(main, startup, {}, [i])
    finally:
        headrace_control.set_max_while_steps(old)
    assert info.value.op_type == "while" and "test_layers_control_flow.py" in info.value.source
