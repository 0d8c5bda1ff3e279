"""lod_tensor_to_array / array_to_lod_tensor / shrink_rnn_memory: the kernels through the
Executor against the NumPy reference (empty sequences, nested LoD, a ranked level below the
top, empty batches, steps without a value), and finite-difference gradients of
"lod_tensor_to_array", "array_to_lod_tensor" and "shrink_rnn_memory", alone and in a
DynamicRNN unrolled by hand into a flat program."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.errors import OpError, ShapeError
from headrace.runtime import Tensor
from headrace.testing import build_op
from headrace_control.reference.lod_array import (
    array_to_lod_tensor, lod_tensor_to_array, shrink_rnn_memory, shrink_rnn_memory_grad)
from headrace_control.reference.rank_table import lod_rank_table

RNG = np.random.default_rng(11)


def _seqs(lengths, cols=2):
    offsets = np.cumsum([0] + list(lengths)).tolist()
    return Tensor(RNG.standard_normal((offsets[-1], cols)), [offsets])


NESTED = Tensor(RNG.standard_normal((7, 2)), [[0, 1, 1, 4], [0, 2, 2, 6, 7]])
# X and the level its table ranks.
CASES = {
    "empty_sequences": (_seqs([2, 0, 3, 1]), 0),
    "equal_lengths": (_seqs([2, 2]), 0),
    "nested_items": (NESTED, 0),
    "ranked_level_1": (NESTED, 1),
    "all_empty": (_seqs([0, 0]), 0),
    "no_sequences": (_seqs([]), 0),
}


def _declare(g, name, x):
    g.create_var(name=name, shape=(-1,) + x.data.shape[1:], dtype="float64",
                 lod_level=len(x.lod), need_check_feed=True)


def _run(prog, feed, fetch):
    return hr.Executor().run(prog, feed=feed, fetch_list=fetch, scope=hr.Scope(),
                             return_numpy=False)


def _round_trip(x, level):
    prog = hr.Program()
    g = prog.global_block()
    _declare(g, "x", x)
    g.append_op("lod_rank_table", {"X": "x"}, {"Out": "table"}, {"level": level})
    g.append_op("lod_tensor_to_array", {"X": "x", "RankTable": "table"}, {"Out": "arr"})
    g.append_op("array_to_lod_tensor", {"X": "arr", "RankTable": "table"}, {"Out": "back"})
    return prog


@pytest.mark.parametrize("case", CASES)
def test_to_array_and_back_match_the_reference(case):
    x, level = CASES[case]
    arr, back, table = _run(_round_trip(x, level), {"x": x}, ["arr", "back", "table"])
    ref_table = lod_rank_table({"X": x}, {"level": level})["Out"]
    expected = lod_tensor_to_array({"X": x, "RankTable": ref_table}, {})["Out"]
    assert len(arr) == len(expected) == max([n for _, n in ref_table.items], default=0)
    for got, exp in zip(arr, expected):
        np.testing.assert_array_equal(got.numpy(), exp.data)
        assert got.lod == exp.lod
    ref_back = array_to_lod_tensor({"X": expected, "RankTable": ref_table}, {})["Out"] \
        if expected else None
    for value in (back,) if ref_back is None else (back, ref_back):
        np.testing.assert_array_equal(np.asarray(value.data), x.data)  # the round trip
        assert value.lod == x.lod


def test_steps_shrink_in_rank_order():
    x = _seqs([2, 0, 3, 1], cols=1)
    (arr,) = _run(_round_trip(x, 0), {"x": x}, ["arr"])
    rows = x.data[:, 0]
    # Ranked: seq 2 (rows 2..4), seq 0 (rows 0..1), seq 3 (row 5); seq 1 is empty.
    assert [a.numpy()[:, 0].tolist() for a in arr] == [
        [rows[2], rows[0], rows[5]], [rows[3], rows[1]], [rows[4]]]


def test_a_step_without_a_value_counts_as_zeros():
    # The gradient of an array step nothing wrote (an array grows with holes).
    prog = hr.Program()
    g = prog.global_block()
    _declare(g, "x", _seqs([3, 1]))
    g.create_var(name="step", shape=[-1, 2], dtype="float64", need_check_feed=True)
    g.create_var(name="arr", type="lod_tensor_array", shape=[-1, 2], dtype="float64")
    g.append_op("lod_rank_table", {"X": "x"}, {"Out": "table"})
    for position in (0, 2):
        g.append_op("fill_constant", {}, {"Out": f"i{position}"},
                    {"shape": [1], "dtype": 3, "value": float(position)})
        g.append_op("write_to_array", {"X": "step", "I": f"i{position}"}, {"Out": "arr"})
    g.append_op("array_to_lod_tensor", {"X": "arr", "RankTable": "table"}, {"Out": "out"})
    step = np.array([[1.0, 2.0], [3.0, 4.0]])
    (out,) = _run(prog, {"x": _seqs([3, 1]), "step": step}, ["out"])
    # Sequence 0 (3 long) takes row 0 of steps 0, 1 (missing: zeros), 2; sequence 1 row 1 of
    # step 0.
    np.testing.assert_array_equal(out.numpy(), [[1, 2], [0, 0], [1, 2], [3, 4]])
    assert out.lod == [[0, 3, 4]]


def test_a_step_with_too_few_entries_is_reported():
    prog = hr.Program()
    g = prog.global_block()
    _declare(g, "x", _seqs([2, 2]))
    g.create_var(name="step", shape=[-1, 2], dtype="float64", need_check_feed=True)
    g.create_var(name="arr", type="lod_tensor_array", shape=[-1, 2], dtype="float64")
    g.append_op("lod_rank_table", {"X": "x"}, {"Out": "table"})
    g.append_op("fill_constant", {}, {"Out": "i"}, {"shape": [1], "dtype": 3, "value": 0.0})
    g.append_op("write_to_array", {"X": "step", "I": "i"}, {"Out": "arr"})
    g.append_op("array_to_lod_tensor", {"X": "arr", "RankTable": "table"}, {"Out": "out"})
    with pytest.raises(OpError, match=r"array_to_lod_tensor: step 0 holds 1 entries, but 2 "
                                      r"sequences run at that step"):
        _run(prog, {"x": _seqs([2, 2]), "step": np.ones((1, 2))}, ["out"])


def test_to_array_refuses_sequences_other_than_its_tables():
    prog = hr.Program()
    g = prog.global_block()
    _declare(g, "x", _seqs([1, 2]))
    _declare(g, "y", _seqs([2, 1]))
    g.append_op("lod_rank_table", {"X": "x"}, {"Out": "table"})
    g.append_op("lod_tensor_to_array", {"X": "y", "RankTable": "table"}, {"Out": "arr"})
    with pytest.raises(OpError, match=r"lod_tensor_to_array: X's sequences at LoD level 0 are "
                                      r"not the lengths its rank table holds"):
        _run(prog, {"x": _seqs([1, 2]), "y": _seqs([2, 1])}, ["arr"])


def _shrink_program(x, by):
    prog = hr.Program()
    g = prog.global_block()
    _declare(g, "x", by)
    _declare(g, "mem", x)
    g.create_var(name="i", shape=[1], dtype="int64", need_check_feed=True)
    g.append_op("lod_rank_table", {"X": "x"}, {"Out": "table"})
    g.append_op("shrink_rnn_memory", {"X": "mem", "RankTable": "table", "I": "i"},
                {"Out": "out"})
    g.create_var(name="dout", shape=(-1,) + x.data.shape[1:], dtype="float64",
                 need_check_feed=True)
    g.append_op("shrink_rnn_memory_grad", {"X": "mem", "Out@GRAD": "dout"},
                {"X@GRAD": "dmem"})
    return prog


@pytest.mark.parametrize("memory", ["rows", "sequences"])
@pytest.mark.parametrize("step", [0, 1, 2, 3, 5])
def test_shrink_matches_the_reference(memory, step):
    by = _seqs([2, 0, 3, 1])  # alive: 3, 2, 1, 0, ... sequences
    mem = Tensor(RNG.standard_normal((4, 3))) if memory == "rows" else _seqs([1, 2, 0, 1], 3)
    table = lod_rank_table({"X": by}, {"level": 0})["Out"]
    ref = shrink_rnn_memory({"X": mem, "RankTable": table, "I": np.array([step])}, {})["Out"]
    dout = RNG.standard_normal(ref.data.shape)
    out, dmem = _run(_shrink_program(mem, by), {"x": by, "mem": mem, "i": np.array([step]),
                                                "dout": dout}, ["out", "dmem"])
    np.testing.assert_array_equal(out.numpy(), ref.data)
    assert out.lod == ref.lod
    ref_grad = shrink_rnn_memory_grad({"X": mem, "Out@GRAD": dout}, {})["X@GRAD"]
    np.testing.assert_array_equal(dmem.numpy(), ref_grad.data)
    assert dmem.lod == mem.lod


def test_shrink_refuses_a_memory_smaller_than_the_batch():
    by = _seqs([2, 3, 1])
    mem = Tensor(RNG.standard_normal((2, 3)))
    with pytest.raises(OpError, match=r"shrink_rnn_memory: 3 sequences run at step 0, but X "
                                      r"holds only 2 rows"):
        _run(_shrink_program(mem, by), {"x": by, "mem": mem, "i": np.array([0]),
                                        "dout": np.ones((2, 3))}, ["out"])


def test_shape_rules():
    table = {"type": "lod_rank_table"}
    prog, op = build_op("lod_tensor_to_array", {"X": ([-1, 4], "float32", 2),
                                                "RankTable": table})
    arr = prog.global_block().var(op.output("Out")[0])
    assert (arr.kind, arr.shape, arr.dtype, arr.lod_level) == \
        ("lod_tensor_array", (-1, 4), "float32", 1)
    arr_in = {"type": "lod_tensor_array", "shape": [-1, 4], "dtype": "float32"}
    prog, op = build_op("array_to_lod_tensor", {"X": arr_in, "RankTable": table})
    out = prog.global_block().var(op.output("Out")[0])
    assert (out.kind, out.shape, out.lod_level) == ("lod_tensor", (-1, 4), 1)
    with pytest.raises(ShapeError, match=r"input 'X' \(x_0\) is a lod_tensor variable"):
        build_op("array_to_lod_tensor", {"X": ([-1, 4], "float32"), "RankTable": table})
    with pytest.raises(ShapeError, match=r"input 'I' \(i_0\) must hold exactly one element"):
        build_op("shrink_rnn_memory", {"X": ([-1, 4], "float32"), "RankTable": table,
                                       "I": ([2], "int64")})


def _to_array_and_back(g, h):
    g.append_op("lod_rank_table", {"X": h}, {"Out": "t"}, {"level": 0})
    g.append_op("lod_tensor_to_array", {"X": h, "RankTable": "t"}, {"Out": "a"})
    g.append_op("array_to_lod_tensor", {"X": "a", "RankTable": "t"}, {"Out": "o"})
    return g.var("o")


@pytest.mark.parametrize("x", [_seqs([2, 0, 3, 1]), NESTED, _seqs([0, 0])],
                         ids=["empty_sequences", "nested", "all_empty"])
def test_array_round_trip_gradient_matches_finite_differences(x, lod_grads):
    lod_grads(x, _to_array_and_back)


def _dynamic_rnn(max_len):
    """A DynamicRNN unrolled by hand: mem_0 = reorder(sequence sums), then for each step t,
    mem = tanh(0.5 * shrink(mem, t) + x_t), written to an output array, which goes back to
    a LoD tensor. Every op of this module's gradient runs, with rank-table reordering,
    shrinking batches and empty sequences."""
    def build(g, h):
        g.append_op("lod_rank_table", {"X": h}, {"Out": "t"}, {"level": 0})
        g.append_op("lod_tensor_to_array", {"X": h, "RankTable": "t"}, {"Out": "xs"})
        g.append_op("sequence_pool", {"X": h}, {"Out": "pooled", "MaxIndex": "pool_idx"},
                    {"pooltype": "SUM"})
        g.append_op("reorder_lod_tensor_by_rank", {"X": "pooled", "RankTable": "t"},
                    {"Out": "mem0"})
        g.create_var(name="ys", type="lod_tensor_array", shape=[-1, 2], dtype="float64")
        mem = "mem0"
        for step in range(max_len):
            g.append_op("fill_constant", {}, {"Out": f"i{step}"},
                        {"shape": [1], "dtype": 3, "value": float(step)})
            g.append_op("read_from_array", {"X": "xs", "I": f"i{step}"}, {"Out": f"x{step}"})
            g.append_op("shrink_rnn_memory", {"X": mem, "RankTable": "t", "I": f"i{step}"},
                        {"Out": f"s{step}"})
            g.append_op("scale", {"X": f"s{step}"}, {"Out": f"h{step}"}, {"scale": 0.5})
            g.append_op("elementwise_add", {"X": f"h{step}", "Y": f"x{step}"},
                        {"Out": f"a{step}"})
            g.append_op("tanh", {"X": f"a{step}"}, {"Out": f"m{step}"})
            g.append_op("write_to_array", {"X": f"m{step}", "I": f"i{step}"}, {"Out": "ys"})
            mem = f"m{step}"
        g.append_op("array_to_lod_tensor", {"X": "ys", "RankTable": "t"}, {"Out": "o"})
        return g.var("o")
    return build


def _dynamic_rnn_reference(x):
    """The same recurrence per sequence in plain NumPy."""
    offsets, outs = x.lod[0], []
    for a, b in zip(offsets[:-1], offsets[1:]):
        mem = x.data[a:b].sum(axis=0)
        for row in x.data[a:b]:
            mem = np.tanh(0.5 * mem + row)
            outs.append(mem)
    return np.array(outs).reshape(-1, x.data.shape[1])


@pytest.mark.parametrize("lengths", [[2, 0, 3, 1], [3, 3], [1]])
def test_dynamic_rnn_unrolled_gradient_matches_finite_differences(lengths, lod_grads):
    x = _seqs(lengths)
    out = lod_grads(x, _dynamic_rnn(max(lengths)))
    assert out.lod == x.lod and out.numpy().shape == x.data.shape


def test_dynamic_rnn_unrolled_forward_matches_numpy():
    x = _seqs([2, 0, 3, 1])
    prog = hr.Program()
    g = prog.global_block()
    _declare(g, "x", x)
    out = _dynamic_rnn(3)(g, g.var("x"))
    (got,) = _run(prog, {"x": x}, [out])
    np.testing.assert_allclose(got.numpy(), _dynamic_rnn_reference(x), rtol=1e-12)
    assert got.lod == x.lod


def _dynamic_rnn_while(g, h):
    """The same recurrence as a ``while`` loop, as a DynamicRNN runs it: the step count is
    max_sequence_len, the memory shrinks to the running sequences at each step (its
    gradient is padded back), steps go to an array that array_to_lod_tensor turns back."""
    prog = g.program
    with hr.program_guard(prog, hr.Program()):
        g.append_op("lod_rank_table", {"X": h}, {"Out": "t"}, {"level": 0})
        g.append_op("max_sequence_len", {"RankTable": "t"}, {"Out": "max_len"})
        g.append_op("lod_tensor_to_array", {"X": h, "RankTable": "t"}, {"Out": "xs"})
        g.append_op("sequence_pool", {"X": h}, {"Out": "pooled", "MaxIndex": "pool_idx"},
                    {"pooltype": "SUM"})
        g.append_op("reorder_lod_tensor_by_rank", {"X": "pooled", "RankTable": "t"},
                    {"Out": "mem"})
        i = layers.fill_constant([1], "int64", 0)
        ys = layers.create_array("float64")
        cond = layers.less_than(i, g.var("max_len"))
        loop = layers.While(cond)
        with loop.block():
            x_t = layers.array_read(g.var("xs"), i)
            body = prog.current_block()
            body.append_op("shrink_rnn_memory", {"X": "mem", "RankTable": "t", "I": i},
                           {"Out": "shrunk"})
            body.append_op("scale", {"X": "shrunk"}, {"Out": "half"}, {"scale": 0.5})
            body.append_op("elementwise_add", {"X": "half", "Y": x_t}, {"Out": "pre"})
            body.append_op("tanh", {"X": "pre"}, {"Out": "new_mem"})
            layers.array_write(body.var("new_mem"), i, array=ys)
            body.append_op("assign", {"X": "new_mem"}, {"Out": "mem"})
            layers.increment(i)
            layers.less_than(i, g.var("max_len"), cond=cond)
        g.append_op("array_to_lod_tensor", {"X": ys, "RankTable": "t"}, {"Out": "o"})
    return g.var("o")


@pytest.mark.parametrize("lengths", [[2, 0, 3, 1], [3, 3], [1], [0, 0]],
                         ids=["empty_sequences", "equal", "one", "all_empty"])
def test_dynamic_rnn_while_gradient_matches_finite_differences(lengths, lod_grads):
    # all_empty: max_sequence_len is 0, the loop runs no step, the output has no rows.
    x = _seqs(lengths)
    out = lod_grads(x, _dynamic_rnn_while)
    assert out.lod == x.lod
    prog = hr.Program()
    g = prog.global_block()
    _declare(g, "x", x)
    (got,) = _run(prog, {"x": x}, [_dynamic_rnn_while(g, g.var("x"))])
    np.testing.assert_allclose(got.numpy(), _dynamic_rnn_reference(x), rtol=1e-12)



def _static_sequences_while(g, h):
    """A while loop reading a LoD static input as a DynamicRNN does: reordered by the rank
    table before the loop, shrunk to the running sequences in each step, pooled per
    sequence and multiplied with the step's input."""
    prog = g.program
    with hr.program_guard(prog, hr.Program()):
        g.append_op("lod_rank_table", {"X": h}, {"Out": "t"}, {"level": 0})
        g.append_op("max_sequence_len", {"RankTable": "t"}, {"Out": "max_len"})
        g.append_op("lod_tensor_to_array", {"X": h, "RankTable": "t"}, {"Out": "xs"})
        g.append_op("reorder_lod_tensor_by_rank", {"X": h, "RankTable": "t"},
                    {"Out": "static"})
        i = layers.fill_constant([1], "int64", 0)
        ys = layers.create_array("float64")
        cond = layers.less_than(i, g.var("max_len"))
        loop = layers.While(cond)
        with loop.block():
            x_t = layers.array_read(g.var("xs"), i)
            body = prog.current_block()
            body.append_op("shrink_rnn_memory", {"X": "static", "RankTable": "t", "I": i},
                           {"Out": "running"})
            body.append_op("sequence_pool", {"X": "running"},
                           {"Out": "pooled", "MaxIndex": "pool_idx"}, {"pooltype": "SUM"})
            body.append_op("elementwise_mul", {"X": "pooled", "Y": x_t}, {"Out": "y"})
            layers.array_write(body.var("y"), i, array=ys)
            layers.increment(i)
            layers.less_than(i, g.var("max_len"), cond=cond)
        g.append_op("array_to_lod_tensor", {"X": ys, "RankTable": "t"}, {"Out": "o"})
    return g.var("o")


def test_a_lod_static_input_gradient_keeps_its_lod_through_the_loop(lod_grads):
    # while_grad hands back the summed gradient of a read-only input with the input's LoD,
    # so reorder_lod_tensor_by_rank_grad can cut it by sequences.
    lod_grads(_seqs([2, 0, 3, 1]), _static_sequences_while)


@pytest.mark.cuda
def test_the_sequence_ops_on_cuda_agree_with_the_cpu():
    # The kernels serve every device: LoD and rank tables on the host, rows on the device.
    x = _seqs([2, 0, 3, 1])
    prog = hr.Program()
    g = prog.global_block()
    _declare(g, "x", x)
    g.create_var(name="init", shape=[-1, 2], dtype="float64", need_check_feed=True)
    g.create_var(name="i", shape=[1], dtype="int64", need_check_feed=True)
    g.append_op("lod_rank_table", {"X": "x"}, {"Out": "t"})
    g.append_op("max_sequence_len", {"RankTable": "t"}, {"Out": "max_len"})
    g.append_op("lod_tensor_to_array", {"X": "x", "RankTable": "t"}, {"Out": "arr"})
    g.append_op("array_to_lod_tensor", {"X": "arr", "RankTable": "t"}, {"Out": "back"})
    g.append_op("reorder_lod_tensor_by_rank", {"X": "init", "RankTable": "t"}, {"Out": "r"})
    g.append_op("reorder_lod_tensor_by_rank_grad", {"X": "r", "RankTable": "t"},
                {"Out": "r_back"})
    g.append_op("shrink_rnn_memory", {"X": "r", "RankTable": "t", "I": "i"}, {"Out": "s"})
    g.append_op("shrink_rnn_memory_grad", {"X": "r", "Out@GRAD": "s"}, {"X@GRAD": "s_pad"})
    outs = ["max_len", "back", "r", "r_back", "s", "s_pad"]
    feed = {"x": x, "init": RNG.standard_normal((4, 2)), "i": np.array([1])}
    results = [[(v.numpy(), v.lod) for v in _place_run(place, prog, feed, outs)]
               for place in (hr.CPUPlace(), hr.CUDAPlace(0))]
    for name, (a, lod_a), (b, lod_b) in zip(outs, *results):
        np.testing.assert_array_equal(a, b, err_msg=name)
        assert lod_a == lod_b, name
    np.testing.assert_array_equal(results[1][1][0], x.data)


def _place_run(place, prog, feed, fetch):
    return hr.Executor(place).run(prog, feed=feed, fetch_list=fetch, scope=hr.Scope(),
                                  return_numpy=False)
