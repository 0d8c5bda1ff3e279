"""tensor_array_to_tensor: concatenation and stacking against the NumPy reference (Out and
Paddle's OutIndex), shape rule, errors, and the gradient ("tensor_array_to_tensor_grad")
against the reference and finite differences, alone and beside the array's other readers."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.errors import OpError
from headrace.testing import program_gradients
from headrace_control.reference import tensor_array_to_tensor as ref

SAME = [(2, 3)] * 3
RAGGED = [(2, 3), (1, 3), (3, 3)]  # concatenated on axis 0


def _join(block, arr, axis, stack):
    out = block.create_var(name="out", dtype="float64")
    index = block.create_var(name="index", dtype="int32")
    block.append_op("tensor_array_to_tensor", {"X": arr}, {"Out": out, "OutIndex": index},
                    {"axis": axis, "use_stack": stack})
    return out


def _program(axis, stack, shapes=SAME, extra_read=None):
    """Parameters P0, P1, ... written (scaled by k + 1) into an array by write_to_array ops in
    the global block, joined; ``extra_read`` ("before"/"after" the join) also reads element 1
    into the loss, so two readers share the array's gradient."""
    main, startup = hr.Program(), hr.Program()
    g = main.global_block()
    with hr.program_guard(main, startup):
        arr = layers.create_array("float64")
        for k, shape in enumerate(shapes):
            p = layers.create_parameter(list(shape), "float64", name=f"P{k}")
            layers.array_write(layers.scale(p, scale=k + 1.0),
                               layers.fill_constant([1], "int64", k), array=arr)
        read = None
        if extra_read == "before":
            read = layers.array_read(arr, layers.fill_constant([1], "int64", 1))
        out = _join(g, arr, axis, stack)
        if extra_read == "after":
            read = layers.array_read(arr, layers.fill_constant([1], "int64", 1))
        loss = layers.mean(layers.elementwise_mul(out, out))
        if read is not None:
            loss = layers.elementwise_add(loss, layers.mean(layers.elementwise_mul(read, read)))
        hr.append_backward(loss)
    return main, startup, loss


def _values(shapes):
    return {f"P{k}": np.random.RandomState(k).randn(*s) for k, s in enumerate(shapes)}


def _check_gradients(main, startup, loss, values):
    analytic, numeric = program_gradients(main, startup, loss, list(values), {},
                                          values=values)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)
    return analytic


@pytest.mark.parametrize("axis, stack, shapes", [
    (0, False, SAME), (1, False, SAME), (-1, False, SAME), (0, False, RAGGED),
    (-2, False, RAGGED), (0, True, SAME), (1, True, SAME), (2, True, SAME), (-1, True, SAME)])
def test_joins_like_numpy_and_differentiates(axis, stack, shapes):
    main, startup, loss = _program(axis, stack, shapes)
    values = _values(shapes)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, v in values.items():
        scope.set(n, hr.Tensor(v.copy()))
    out, index, *grads = exe.run(main, fetch_list=["out", "index"] + [f"{n}@GRAD"
                                                                       for n in values],
                                 scope=scope)
    parts = [(k + 1.0) * values[f"P{k}"] for k in range(len(shapes))]
    ref_out, ref_index = ref.tensor_array_to_tensor(parts, axis, stack)
    np.testing.assert_allclose(out, ref_out, rtol=1e-15)
    assert index.dtype == np.int32
    np.testing.assert_array_equal(index, ref_index)
    # mean(out^2): d/d part_k = 2 out / out.size, cut back; then the scale by k + 1.
    ref_grads = ref.tensor_array_to_tensor_grad(parts, 2 * ref_out / ref_out.size, axis, stack)
    for k, (got, want) in enumerate(zip(grads, ref_grads)):
        np.testing.assert_allclose(got, (k + 1.0) * want, rtol=1e-13)
    _check_gradients(main, startup, loss, values)


def test_out_index_as_paddle_reports_it():
    # Paddle's own examples: elements of shape [2]; concat on axis 0 -> [2, 2, 2], and
    # stacking on axis 0 reports the elements' sizes along axis 0 too: [2, 2, 2].
    parts = [np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])]
    out, index = ref.tensor_array_to_tensor(parts, 0, False)
    assert out.tolist() == [1, 2, 3, 4, 5, 6] and index.tolist() == [2, 2, 2]
    out, index = ref.tensor_array_to_tensor(parts, 0, True)
    assert out.tolist() == [[1, 2], [3, 4], [5, 6]] and index.tolist() == [2, 2, 2]
    prog = hr.Program()
    g = prog.global_block()
    xs = [g.create_var(name=f"x{k}", shape=[2], dtype="float64", need_check_feed=True)
          for k in range(3)]
    arr = g.create_var(name="arr", type="lod_tensor_array", dtype="float64", shape=[2])
    for k, x in enumerate(xs):
        i = g.create_var(name=f"i{k}", shape=[1], dtype="int64", need_check_feed=True)
        g.append_op("write_to_array", {"X": x, "I": i}, {"Out": arr})
    _join(g, arr, 0, True)
    feed = {f"x{k}": p for k, p in enumerate(parts)}
    feed.update({f"i{k}": np.array([k], np.int64) for k in range(3)})
    got, index = hr.Executor().run(prog, feed=feed, fetch_list=["out", "index"],
                                   scope=hr.Scope())
    np.testing.assert_array_equal(got, [[1, 2], [3, 4], [5, 6]])
    assert index.tolist() == [2, 2, 2]


@pytest.mark.parametrize("where", ["before", "after"])
def test_gradient_adds_to_the_arrays_other_readers(where):
    # The array's gradient is one variable all its readers' grad ops write: the join's part
    # must be added to read_from_array's, whichever grad op runs first.
    main, startup, loss = _program(0, False, extra_read=where)
    values = _values(SAME)
    analytic = _check_gradients(main, startup, loss, values)
    assert analytic["P1"].any()


def test_shape_rule():
    main, _, _ = _program(1, True)
    assert tuple(main.global_block().var("out").shape) == (2, -1, 3)
    main, _, _ = _program(1, False)
    assert tuple(main.global_block().var("out").shape) == (2, -1)
    main, _, _ = _program(-1, True)
    assert tuple(main.global_block().var("out").shape) == (2, 3, -1)
    assert tuple(main.global_block().var("index").shape) == (-1,)
    assert main.global_block().var("index").dtype == "int32"


def test_bad_axis_and_empty_array_are_clear_errors():
    with pytest.raises(hr.HeadraceError, match="attribute 'axis' must name a dim"):
        _program(2, False)
    with pytest.raises(hr.HeadraceError, match="attribute 'axis' must name a dim"):
        _program(-4, True)
    prog = hr.Program()
    g = prog.global_block()
    arr = g.create_var(name="arr", type="lod_tensor_array", dtype="float32", shape=[2])
    g.append_op("tensor_array_to_tensor", {"X": arr}, {"Out": "out", "OutIndex": "idx"},
                {"use_stack": True})
    with pytest.raises(OpError, match="tensor_array_to_tensor.*the array is empty"):
        hr.Executor().run(prog, fetch_list=["out"], scope=hr.Scope())


def test_unwritten_position_is_a_clear_error():
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=[2], dtype="float64", need_check_feed=True)
    i = g.create_var(name="i", shape=[1], dtype="int64", need_check_feed=True)
    arr = g.create_var(name="arr", type="lod_tensor_array", dtype="float64", shape=[2])
    g.append_op("write_to_array", {"X": x, "I": i}, {"Out": arr})
    _join(g, arr, 0, False)
    with pytest.raises(OpError, match=r"tensor_array_to_tensor.*positions \[0, 1\]"):
        hr.Executor().run(prog, feed={"x": np.ones(2), "i": np.array([2], np.int64)},
                          fetch_list=["out"], scope=hr.Scope())


@pytest.mark.cuda
@pytest.mark.parametrize("stack", [False, True])
def test_on_cuda_agrees_with_the_cpu(stack):
    prog = hr.Program()
    g = prog.global_block()
    arr = g.create_var(name="arr", type="lod_tensor_array", dtype="float32", shape=[2, 3])
    for k in range(3):
        x = g.create_var(name=f"x{k}", shape=[2, 3], dtype="float32", need_check_feed=True)
        i = g.create_var(name=f"i{k}", shape=[1], dtype="int64", need_check_feed=True)
        g.append_op("write_to_array", {"X": x, "I": i}, {"Out": arr})
    out = _join(g, arr, 1, stack)
    og = g.create_var(name="og", shape=list(out.shape), dtype="float32", need_check_feed=True)
    grad = g.create_var(name="arr@GRAD", type="lod_tensor_array", dtype="float32",
                        shape=[2, 3])
    g.append_op("tensor_array_to_tensor_grad", {"X": arr, "Out@GRAD": og}, {"X@GRAD": grad},
                {"axis": 1, "use_stack": stack})
    for k in range(3):
        g.append_op("read_from_array", {"X": grad, "I": f"i{k}"}, {"Out": f"g{k}"})
    rng = np.random.RandomState(0)
    feed = {f"x{k}": rng.rand(2, 3).astype(np.float32) for k in range(3)}
    feed.update({f"i{k}": np.array([k], np.int64) for k in range(3)})
    feed["og"] = rng.rand(*((2, 3, 3) if stack else (2, 9))).astype(np.float32)
    fetch = ["out", "index", "g0", "g1", "g2"]
    cpu = hr.Executor(hr.CPUPlace()).run(prog, feed=feed, fetch_list=fetch, scope=hr.Scope())
    gpu = hr.Executor(hr.CUDAPlace(0)).run(prog, feed=feed, fetch_list=fetch,
                                           scope=hr.Scope())
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(a, b)
    parts = [feed[f"x{k}"] for k in range(3)]
    np.testing.assert_array_equal(cpu[0], ref.tensor_array_to_tensor(parts, 1, stack)[0])
    for got, want in zip(cpu[2:], ref.tensor_array_to_tensor_grad(parts, feed["og"], 1, stack)):
        np.testing.assert_array_equal(got, want)
