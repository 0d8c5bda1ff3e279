"""select_input / select_output / select_input_grad: routing by the mask against the NumPy
references, shape rules, candidates without values, errors, and the gradients against finite
differences, in flat programs and through cond."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.errors import OpError
from headrace.testing import program_gradients
from headrace_control.reference import select as ref


def _run(prog, feed, fetch):
    return hr.Executor().run(prog, feed=feed, fetch_list=fetch, scope=hr.Scope())


def _select_program(shapes=([2, 3], [2, 3]), lod_levels=(0, 0)):
    prog = hr.Program()
    g = prog.global_block()
    xs = [g.create_var(name=f"x{k}", shape=s, dtype="float64", lod_level=lv,
                       need_check_feed=True)
          for k, (s, lv) in enumerate(zip(shapes, lod_levels))]
    m = g.create_var(name="m", shape=[1], dtype="int32", need_check_feed=True)
    out = g.append_op("select_input", {"X": xs, "Mask": m}, {"Out": "out"}).output("Out")
    return prog, out[0]


@pytest.mark.parametrize("mask", [0, 1, 2])
def test_select_input_picks_the_masked_candidate(mask):
    prog, out = _select_program(([2, 3], [2, 3], [2, 3]), (0, 0, 0))
    xs = [np.random.rand(2, 3) for _ in range(3)]
    feed = {f"x{k}": x for k, x in enumerate(xs)}
    feed["m"] = np.array([mask], np.int32)
    (got,) = _run(prog, feed, [out])
    np.testing.assert_array_equal(got, ref.select_input(xs, feed["m"]))


def test_select_input_keeps_the_picked_lod():
    prog, out = _select_program(([-1, 2], [-1, 2]), (1, 1))
    a = hr.Tensor(np.random.rand(3, 2), [[0, 1, 3]])
    b = hr.Tensor(np.random.rand(4, 2), [[0, 4]])
    (got,) = hr.Executor().run(prog, feed={"x0": a, "x1": b, "m": np.array([1], np.int32)},
                               fetch_list=[out], scope=hr.Scope(), return_numpy=False)
    assert got.lod == [[0, 4]]
    np.testing.assert_array_equal(got.numpy(), b.numpy())


def test_select_input_shape_rule():
    prog, out = _select_program(([2, 3], [2, 3]), (0, 1))
    v = prog.global_block().var(out)
    assert tuple(v.shape) == (2, 3) and v.dtype == "float64" and v.lod_level == 1
    prog, out = _select_program(([2, 3], [4, 3]))
    assert tuple(prog.global_block().var(out).shape) == (-1, 3)  # the dims that differ


def test_select_input_bad_mask_names_the_op():
    prog, out = _select_program()
    with pytest.raises(OpError, match=r"select_input.*Mask must pick one of the 2 candidates"):
        _run(prog, {"x0": np.zeros((2, 3)), "x1": np.zeros((2, 3)),
                    "m": np.array([2], np.int32)}, [out])


def test_select_input_needs_one_dtype_and_one_kind():
    prog = hr.Program()
    g = prog.global_block()
    a = g.create_var(name="a", shape=[2], dtype="float64")
    b = g.create_var(name="b", shape=[2], dtype="float32")
    arr = g.create_var(name="arr", shape=[2], dtype="float64", type="lod_tensor_array")
    m = g.create_var(name="m", shape=[1], dtype="int32")
    with pytest.raises(hr.HeadraceError, match="must share one dtype"):
        g.append_op("select_input", {"X": [a, b], "Mask": m}, {"Out": "out"})
    with pytest.raises(hr.HeadraceError, match="all be tensors or all tensor arrays"):
        g.append_op("select_input", {"X": [a, arr], "Mask": m}, {"Out": "out2"})


def _branch_not_run_program():
    """``t`` is written by a conditional_block whose condition ``c`` is fed False."""
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=[3], dtype="float64", need_check_feed=True)
    c = g.create_var(name="c", shape=[1], dtype="bool", need_check_feed=True)
    m = g.create_var(name="m", shape=[1], dtype="int32", need_check_feed=True)
    t = g.create_var(name="t", shape=[3], dtype="float64")
    with prog.block_guard() as sub:
        sub.append_op("scale", {"X": x}, {"Out": t}, {"scale": 2.0})
    g.append_op("conditional_block", {"Cond": [c], "Input": [x]},
                {"Out": [t], "Scope": ["scope"]},
                {"sub_block": sub, "is_scalar_condition": True})
    g.append_op("select_input", {"X": [x, t], "Mask": m}, {"Out": "out"})
    return prog


def test_select_input_candidate_without_a_value():
    prog = _branch_not_run_program()
    xv = np.array([1.0, 2.0, 3.0])
    feed = {"x": xv, "c": np.array([False]), "m": np.array([0], np.int32)}
    (got,) = _run(prog, feed, ["out"])  # the other candidate has no value: fine
    np.testing.assert_array_equal(got, xv)
    feed["m"] = np.array([1], np.int32)
    with pytest.raises(OpError, match=r"select_input.*X\[1\] has no value"):
        _run(prog, feed, ["out"])
    feed["c"] = np.array([True])
    (got,) = _run(prog, feed, ["out"])
    np.testing.assert_array_equal(got, 2 * xv)


def test_select_output_writes_only_the_masked_output():
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=[3], dtype="float64", need_check_feed=True)
    m = g.create_var(name="m", shape=[1], dtype="int32", need_check_feed=True)
    outs = [g.create_var(name=f"o{k}", shape=[3], dtype="float64") for k in range(3)]
    g.append_op("select_output", {"X": x, "Mask": m}, {"Out": outs})
    assert all(tuple(o.shape) == (3,) and o.dtype == "float64" for o in outs)
    xv = np.array([1.0, 2.0, 3.0])
    (got,) = _run(prog, {"x": xv, "m": np.array([2], np.int32)}, ["o2"])
    np.testing.assert_array_equal(got, ref.select_output(xv, [2], [None] * 3)[2])
    with pytest.raises(hr.HeadraceError, match="o0"):  # never written: no value to fetch
        _run(prog, {"x": xv, "m": np.array([2], np.int32)}, ["o0"])


def test_select_output_to_an_empty_gradient_slot():
    # Paddle writes select_input's gradient as select_output(Out@GRAD) -> X@GRAD with
    # @EMPTY@ for the candidates that need none: routing to one of those writes nothing.
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=[3], dtype="float64", need_check_feed=True)
    m = g.create_var(name="m", shape=[1], dtype="int32", need_check_feed=True)
    g.create_var(name="a@GRAD", shape=[3], dtype="float64")
    g.append_op("select_output", {"X": x, "Mask": m}, {"Out": ["a@GRAD", "@EMPTY@"]})
    xv = np.array([1.0, 2.0, 3.0])
    (got,) = _run(prog, {"x": xv, "m": np.array([0], np.int32)}, ["a@GRAD"])
    np.testing.assert_array_equal(got, xv)
    with pytest.raises(hr.HeadraceError, match="a@GRAD"):
        _run(prog, {"x": xv, "m": np.array([1], np.int32)}, ["a@GRAD"])


def _flat_pick(mask, candidates):
    """loss = mean(select_input(candidates)^2), the candidates parameters A, B, ... or the
    data variable "d" (named "d" in ``candidates``)."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        xs = [layers.data("d", shape=[2, 3], dtype="float64", append_batch_size=False)
              if n == "d" else layers.create_parameter([2, 3], "float64", name=n)
              for n in dict.fromkeys(candidates)]
        by_name = {x.name: x for x in xs}
        m = layers.fill_constant([1], "int32", mask)
        out = main.global_block().create_var(name="out", dtype="float64")
        main.global_block().append_op(
            "select_input", {"X": [by_name[n] for n in candidates], "Mask": m}, {"Out": out})
        loss = layers.mean(layers.elementwise_mul(out, out))
    return main, startup, loss


@pytest.mark.parametrize("mask", [0, 1])
def test_flat_select_input_gradients(mask):
    main, startup, loss = _flat_pick(mask, ["A", "B"])
    with hr.program_guard(main, startup):
        hr.append_backward(loss)
    assert "select_input_grad" in [op.type for op in main.global_block().ops]
    analytic, numeric = program_gradients(main, startup, loss, ["A", "B"], {})
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)
    # The candidate not picked has a value, so its gradient is zeros (not "no value").
    other = "AB"[1 - mask]
    np.testing.assert_array_equal(analytic[other], np.zeros((2, 3)))
    assert analytic["AB"[mask]].any()


def test_flat_select_input_trains_the_picked_parameter_only():
    main, startup, loss = _flat_pick(1, ["A", "B"])
    with hr.program_guard(main, startup):
        hr.optimizer.SGD(learning_rate=0.5).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    a0, b0 = scope.get("A").numpy().copy(), scope.get("B").numpy().copy()
    exe.run(main, fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(scope.get("A").numpy(), a0)  # zero gradient: unchanged
    np.testing.assert_allclose(scope.get("B").numpy(), b0 - 0.5 * 2 * b0 / b0.size)


@pytest.mark.parametrize("mask", [0, 1])
def test_select_input_grad_with_a_candidate_that_needs_none(mask):
    # The data candidate's gradient is @EMPTY@ in select_input_grad's outputs.
    main, startup, loss = _flat_pick(mask, ["d", "A"])
    with hr.program_guard(main, startup):
        hr.append_backward(loss)
    (grad_op,) = [op for op in main.global_block().ops if op.type == "select_input_grad"]
    assert grad_op.output("X@GRAD") == ["@EMPTY@", "A@GRAD"]
    feed = {"d": np.random.RandomState(1).randn(2, 3)}
    analytic, numeric = program_gradients(main, startup, loss, ["A"], feed)
    np.testing.assert_allclose(analytic["A"], numeric["A"], rtol=1e-6, atol=1e-8)
    assert analytic["A"].any() == (mask == 1)


def test_select_input_grad_of_a_repeated_candidate():
    # X = [A, A, B]: A's two gradient parts (the picked one and zeros) are summed.
    main, startup, loss = _flat_pick(1, ["A", "A", "B"])
    with hr.program_guard(main, startup):
        hr.append_backward(loss)
    analytic, numeric = program_gradients(main, startup, loss, ["A", "B"], {})
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)


def test_select_input_grad_matches_the_reference():
    main, startup, loss = _flat_pick(0, ["A", "B"])
    with hr.program_guard(main, startup):
        hr.append_backward(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    a, b = scope.get("A").numpy(), scope.get("B").numpy()
    ga, gb = exe.run(main, fetch_list=["A@GRAD", "B@GRAD"], scope=scope)
    want = ref.select_input_grad([a, b], [0], 2 * a / a.size)
    np.testing.assert_allclose(ga, want[0], rtol=1e-15)
    np.testing.assert_array_equal(gb, want[1])


@pytest.mark.parametrize("flag", [True, False])
def test_cond_gradients_through_select_input(flag):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        c = layers.data("c", shape=[1], dtype="bool", append_batch_size=False)
        w = layers.create_parameter([3, 2], "float64", name="W")
        v = layers.create_parameter([3, 2], "float64", name="V")
        out = layers.cond(c, lambda: layers.tanh(layers.matmul(x, w)),
                          lambda: layers.sigmoid(layers.matmul(x, v)))
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    assert "select_input" in types and "select_input_grad" in types
    feed = {"x": np.random.RandomState(0).randn(4, 3), "c": np.array([flag])}
    analytic, numeric = program_gradients(main, startup, loss, ["W", "V"], feed)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)
    assert analytic["W"].any() == flag and analytic["V"].any() == (not flag)


@pytest.mark.parametrize("mask", [0, 1])
def test_select_output_gradient_is_select_input(mask):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.create_parameter([3], "float64", name="X")
        g = main.global_block()
        m = layers.fill_constant([1], "int32", mask)
        outs = [g.create_var(name=f"o{k}", shape=[3], dtype="float64") for k in range(2)]
        g.append_op("select_output", {"X": x, "Mask": m}, {"Out": outs})
        # Only the routed output is read (the other has no value); its gradient is the
        # only one, and the backward pass zero-fills the other's (no value: none).
        loss = layers.mean(layers.elementwise_mul(outs[mask], outs[mask]))
        hr.append_backward(loss)
    assert "select_input" in [op.type for op in main.global_block().ops[4:]]
    analytic, numeric = program_gradients(main, startup, loss, ["X"], {})
    np.testing.assert_allclose(analytic["X"], numeric["X"], rtol=1e-6, atol=1e-8)
    assert analytic["X"].any()


@pytest.mark.parametrize("mask", [0, 1])
def test_select_input_over_tensor_arrays(mask):
    # Paddle's select_input takes tensor arrays too (a cond that returns one).
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        g = main.global_block()
        arrs = []
        for a in range(2):
            arr = layers.create_array("float64")
            for k in range(2):
                p = layers.create_parameter([2], "float64", name=f"P{a}{k}")
                layers.array_write(p, layers.fill_constant([1], "int64", k), array=arr)
            arrs.append(arr)
        m = layers.fill_constant([1], "int32", mask)
        picked = g.create_var(name="picked", dtype="float64", type="lod_tensor_array")
        g.append_op("select_input", {"X": arrs, "Mask": m}, {"Out": picked})
        out = g.create_var(name="out", dtype="float64")
        g.append_op("tensor_array_to_tensor", {"X": picked},
                    {"Out": out, "OutIndex": g.create_var(name="idx", dtype="int32")},
                    {"axis": 0, "use_stack": True})
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    names = [f"P{a}{k}" for a in range(2) for k in range(2)]
    analytic, numeric = program_gradients(main, startup, loss, names, {})
    for n in names:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)
        assert analytic[n].any() == (n[1] == str(mask))


@pytest.mark.cuda
def test_select_ops_on_cuda_agree_with_the_cpu():
    prog = hr.Program()
    g = prog.global_block()
    xs = [g.create_var(name=f"x{k}", shape=[2, 3], dtype="float32", need_check_feed=True)
          for k in range(2)]
    m = g.create_var(name="m", shape=[1], dtype="int32", need_check_feed=True)
    og = g.create_var(name="og", shape=[2, 3], dtype="float32", need_check_feed=True)
    grads = [g.create_var(name=f"x{k}@GRAD", shape=[2, 3], dtype="float32") for k in range(2)]
    g.append_op("select_input", {"X": xs, "Mask": m}, {"Out": "out"})
    g.append_op("select_input_grad", {"X": xs, "Mask": m, "Out@GRAD": og}, {"X@GRAD": grads})
    outs = [g.create_var(name=f"o{k}", shape=[2, 3], dtype="float32") for k in range(2)]
    g.append_op("select_output", {"X": og, "Mask": m}, {"Out": outs})
    rng = np.random.RandomState(0)
    feed = {"x0": rng.rand(2, 3).astype(np.float32), "x1": rng.rand(2, 3).astype(np.float32),
            "m": np.array([1], np.int32), "og": rng.rand(2, 3).astype(np.float32)}
    fetch = ["out", "x0@GRAD", "x1@GRAD", "o1"]
    cpu = hr.Executor(hr.CPUPlace()).run(prog, feed=feed, fetch_list=fetch, scope=hr.Scope())
    gpu = hr.Executor(hr.CUDAPlace(0)).run(prog, feed=feed, fetch_list=fetch,
                                           scope=hr.Scope())
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(cpu[1], np.zeros((2, 3), np.float32))
