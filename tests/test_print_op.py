"""print / layers.Print: Out is In passed through (LoD kept), In is written to stdout in Paddle's
TensorFormatter layout, ``first_n`` and ``summarize`` honoured, and the gradient op prints the
gradient in the backward phase. The expected texts are written out by hand here, not produced
by headrace's formatter."""
import numpy as np
import pytest

import headrace as hr
from headrace.errors import LayerError, OpValidationError, ShapeError
from headrace.runtime import Tensor
from headrace.runtime.tensor import create_lod_tensor
from headrace.testing import build_op, check_op, infer_shapes

# The run/eval agreement plugin (headrace.testing.agreement) replays a signature's first run
# through eval on another Executor, whose print ops print again: the texts compared here are
# those of the test's own runs, so it runs the unwrapped Executor.run.
RUN = getattr(hr.Executor.run, "__wrapped__", hr.Executor.run)

X = np.array([[1.5, -2.0, 1 / 3], [4.0, 5e-7, 1e7]], np.float32)


def _program(layer_kwargs, lod_level=0, with_backward=False):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 3], dtype="float32", lod_level=lod_level)
        w = hr.layers.create_parameter([1, 3], "float32", name="w",
                                       default_initializer=hr.initializer.Constant(2.0))
        h = hr.layers.elementwise_mul(x, w)
        p = hr.layers.Print(h, **layer_kwargs)
        loss = hr.layers.reduce_sum(hr.layers.scale(p, scale=3.0))
        if with_backward:
            hr.append_backward(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, h, p


def test_definition_keeps_shape_dtype_and_lod_level():
    prog, _ = build_op("print", {"In": ([-1, 7], "int64", 2)})
    x, out = (prog.global_block().var(n) for n in ("in_0", "out_out_0"))
    assert (out.shape, out.dtype, out.lod_level) == (x.shape, x.dtype, x.lod_level)


def test_definition_refuses_arrays_and_unknown_phases():
    with pytest.raises(ShapeError, match=r"input 'In' \(in_0\) is a lod_tensor_array variable"):
        infer_shapes("print", {"In": {"type": "lod_tensor_array", "dtype": "float32"}})
    with pytest.raises(OpValidationError, match="print_phase"):
        infer_shapes("print", {"In": ([2], "float32")}, attrs={"print_phase": "forward"})


def test_layer_refuses_bad_arguments():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = hr.layers.data("x", shape=[3], dtype="float32")
        with pytest.raises(LayerError, match="print_phase"):
            hr.layers.Print(x, print_phase="sideways")
        with pytest.raises(LayerError, match="summarize"):
            hr.layers.Print(x, summarize=-2)
        with pytest.raises(LayerError, match="message"):
            hr.layers.Print(x, message=3)


def test_forward_print_matches_paddles_layout(capsys):
    main, exe, scope, h, p = _program({"message": "after mul", "summarize": 4}, lod_level=1)
    feed = create_lod_tensor(X / 2, [[1, 1]])
    (out,) = RUN(exe, main, feed={"x": feed}, fetch_list=[p], scope=scope, return_numpy=False)
    assert capsys.readouterr().out == (
        f"Variable: {h.name}\n"
        "  - message: after mul\n"
        "  - lod: {{0, 1, 2}}\n"
        "  - place: CPUPlace()\n"
        "  - shape: [2, 3]\n"
        "  - dtype: float32\n"
        "  - data: [1.5 -2 0.333333 4]\n")
    np.testing.assert_array_equal(out.numpy(), X)   # passed through, LoD kept
    assert out.lod == [[0, 1, 2]]


def test_flags_leave_lines_out_and_summarize_minus_one_prints_all(capsys):
    main, exe, scope, _, _ = _program({"summarize": -1, "print_tensor_name": False,
                                       "print_tensor_type": False, "print_tensor_shape": False,
                                       "print_tensor_lod": False})
    RUN(exe, main, feed={"x": X / 2}, scope=scope)
    assert capsys.readouterr().out == (
        "  - place: CPUPlace()\n"
        "  - data: [1.5 -2 0.333333 4 5e-07 1e+07]\n")


@pytest.mark.parametrize("value,text", [
    (np.array([[3, -1], [0, 2 ** 40]], np.int64), "[3 -1 0 1099511627776]"),
    (np.array([True, False, True]), "[1 0 1]"),
    (np.array([np.nan, np.inf, -np.inf, 0.0], np.float64), "[nan inf -inf 0]"),
    (np.zeros((0, 2), np.float32), "[]"),
])
def test_data_line_per_dtype(capfd, value, text):
    check_op("print", {"In": value}, {"Out": value.copy()}, attrs={"summarize": -1},
             places=[hr.CPUPlace()])
    out = capfd.readouterr().out
    assert f"  - data: {text}\n" in out
    assert f"  - shape: [{', '.join(map(str, value.shape))}]\n" in out
    assert f"  - dtype: {value.dtype.name}\n" in out


def test_first_n_counts_the_runs_that_print(capsys):
    main, exe, scope, h, _ = _program({"first_n": 2, "summarize": 1})
    for _ in range(4):
        RUN(exe, main, feed={"x": X}, scope=scope)
    assert capsys.readouterr().out.count(f"Variable: {h.name}\n") == 2


@pytest.mark.parametrize("phase,forward,backward", [
    ("both", True, True), ("forward", True, False), ("backward", False, True)])
def test_phases_and_the_gradient_passed_through(capsys, phase, forward, backward):
    main, exe, scope, h, p = _program({"print_phase": phase, "summarize": 3},
                                      with_backward=True)
    gx, gw = RUN(exe, main, feed={"x": X}, fetch_list=[p.name + "@GRAD", "w@GRAD"],
                     scope=scope)
    text = capsys.readouterr().out
    # loss = sum(3 * Print(x * w)): the gradient reaching the print is 3 everywhere, and
    # passes through unchanged to w's gradient, 3 * sum of x over rows.
    np.testing.assert_array_equal(gx, np.full_like(X, 3.0))
    np.testing.assert_allclose(gw, 3.0 * X.sum(axis=0, keepdims=True), rtol=1e-6)
    assert (f"Variable: {h.name}\n" in text) == forward
    assert (f"Variable: {p.name}@GRAD\n" in text) == backward
    if backward:
        assert f"Variable: {p.name}@GRAD\n  - lod: {{}}\n  - place: CPUPlace()\n" \
               f"  - shape: [2, 3]\n  - dtype: float32\n  - data: [3 3 3]\n" in text
    if forward:
        assert "  - data: [3 -4 0.666667]\n" in text


def test_out_is_a_copy_when_bound_to_a_persistable():
    prog, op = build_op("print", {"In": ([2, 2], "float32")})
    block = prog.global_block()
    block.create_var(name="kept", shape=[2, 2], dtype="float32", persistable=True)
    block.append_op("print", {"In": "in_0"}, {"Out": "kept"}, {"print_phase": "BACKWARD"})
    scope, x = hr.Scope(), np.ones((2, 2), np.float32)
    hr.Executor().run(prog, feed={"in_0": x}, scope=scope)
    kept = scope.find("kept").data
    assert not np.shares_memory(kept, x)
    np.testing.assert_array_equal(kept, x)


def test_printed_by_a_program_on_a_tensor_with_lod(capsys):
    t = Tensor(np.arange(3, dtype=np.int32).reshape(3, 1), [[0, 2, 3]])
    check_op("print", {"In": t}, {"Out": Tensor(t.data.copy(), [[0, 2, 3]])},
             attrs={"message": "ids"}, places=[hr.CPUPlace()])
    out = capsys.readouterr().out
    assert "  - message: ids\n  - lod: {{0, 2, 3}}\n" in out
    assert out.endswith("  - data: [0 1 2]\n")
