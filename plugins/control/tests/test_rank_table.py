"""lod_rank_table / max_sequence_len / reorder_lod_tensor_by_rank: the kernels through the
Executor against the NumPy reference (ties, empty sequences, a deeper level, empty batches),
errors, and a finite-difference gradient of "reorder_lod_tensor_by_rank"."""
import numpy as np
import pytest

import headrace as hr
from headrace.errors import OpError, ShapeError
from headrace.runtime import Tensor
from headrace.testing import build_op
from headrace_control.kernels.flow.rank_table import LoDRankTable
from headrace_control.reference.rank_table import (
    lod_rank_table, max_sequence_len, reorder_lod_tensor_by_rank,
    reorder_lod_tensor_by_rank_grad)

RNG = np.random.default_rng(3)


def _seqs(lengths, cols=2):
    offsets = np.cumsum([0] + list(lengths)).tolist()
    return Tensor(RNG.standard_normal((offsets[-1], cols)), [offsets])


# X, level: ties keep their order; empty sequences rank last; level 1 of a 2-level LoD; a
# batch of empty sequences only; a batch of no sequences.
TABLES = {
    "ties_and_empty": (_seqs([2, 0, 3, 1, 3, 0]), 0),
    "level_1": (Tensor(RNG.standard_normal((6, 2)), [[0, 1, 3], [0, 2, 2, 6]]), 1),
    "level_0_of_2": (Tensor(RNG.standard_normal((6, 2)), [[0, 1, 3], [0, 2, 2, 6]]), 0),
    "all_empty": (_seqs([0, 0, 0]), 0),
    "no_sequences": (_seqs([]), 0),
}


def _program(x, level):
    prog = hr.Program()
    g = prog.global_block()
    g.create_var(name="x", shape=(-1,) + x.data.shape[1:], dtype=x.data.dtype.name,
                 lod_level=len(x.lod), need_check_feed=True)
    g.append_op("lod_rank_table", {"X": "x"}, {"Out": "table"}, {"level": level})
    g.append_op("max_sequence_len", {"RankTable": "table"}, {"Out": "max_len"})
    return prog, g


def _run(prog, feed, fetch):
    return hr.Executor().run(prog, feed=feed, fetch_list=fetch, scope=hr.Scope(),
                             return_numpy=False)


@pytest.mark.parametrize("case", TABLES)
def test_rank_table_and_max_sequence_len_match_the_reference(case):
    x, level = TABLES[case]
    prog, g = _program(x, level)
    assert g.var("table").kind == "lod_rank_table"
    table, max_len = _run(prog, {"x": x}, ["table", "max_len"])
    ref = lod_rank_table({"X": x}, {"level": level})["Out"]
    assert isinstance(table, LoDRankTable)
    assert (table.level, table.coarse_lod, table.items) == tuple(ref)
    assert max_len.numpy().dtype == np.int64
    np.testing.assert_array_equal(max_len.numpy(),
                                  max_sequence_len({"RankTable": ref}, {})["Out"])


def test_rank_table_order():
    x, _ = TABLES["ties_and_empty"]
    (table,) = _run(_program(x, 0)[0], {"x": x}, ["table"])
    assert table.items == ((2, 3), (4, 3), (0, 2), (3, 1), (1, 0), (5, 0))
    assert [table.alive(t) for t in range(4)] == [4, 3, 2, 0]


def _reorder_program(x, by, grad=False):
    prog, g = _program(by, 0)
    g.create_var(name="v", shape=(-1,) + x.data.shape[1:], dtype="float64",
                 lod_level=len(x.lod), need_check_feed=True)
    op = "reorder_lod_tensor_by_rank_grad" if grad else "reorder_lod_tensor_by_rank"
    g.append_op(op, {"X": "v", "RankTable": "table"}, {"Out": "out"})
    return prog


# X to reorder, the tensor whose table orders it: sequences by their own table, rows by the
# table of another tensor (a DynamicRNN's initial memory), nested sequences, empty ones.
REORDERS = {
    "sequences": (_seqs([1, 3, 0, 2]), None),
    "rows": (Tensor(RNG.standard_normal((4, 3))), _seqs([1, 3, 0, 2])),
    "nested": (Tensor(RNG.standard_normal((6, 2)), [[0, 1, 3], [0, 2, 2, 6]]), None),
    "no_sequences": (_seqs([]), None),
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("case", REORDERS)
def test_reorder_matches_the_reference(case, grad):
    x, by = REORDERS[case]
    by = x if by is None else by
    (out, table) = _run(_reorder_program(x, by, grad), {"x": by, "v": x}, ["out", "table"])
    ref = (reorder_lod_tensor_by_rank_grad if grad else reorder_lod_tensor_by_rank)(
        {"X": x, "RankTable": table}, {})["Out"]
    np.testing.assert_array_equal(out.numpy(), ref.data)
    assert out.lod == ref.lod


@pytest.mark.parametrize("case", REORDERS)
def test_reorder_grad_inverts_reorder(case):
    x, by = REORDERS[case]
    by = x if by is None else by
    (out, table) = _run(_reorder_program(x, by), {"x": by, "v": x}, ["out", "table"])
    (back,) = _run(_reorder_program(out, by, grad=True), {"x": by, "v": out}, ["out"])
    np.testing.assert_array_equal(back.numpy(), x.data)
    assert back.lod == x.lod


def test_reorder_needs_one_entry_per_sequence():
    x = Tensor(RNG.standard_normal((3, 3)))
    with pytest.raises(OpError, match=r"reorder_lod_tensor_by_rank: X holds 3 rows, the rank "
                                      r"table 4 sequences"):
        _run(_reorder_program(x, _seqs([1, 3, 0, 2])), {"x": _seqs([1, 3, 0, 2]), "v": x},
             ["out"])


def test_shape_rules():
    with pytest.raises(ShapeError, match=r"input 'X' \(x_0\) has no LoD level 0 to rank"):
        build_op("lod_rank_table", {"X": ([-1, 2], "float32")})
    with pytest.raises(ShapeError, match=r"has no LoD level 1 to rank"):
        build_op("lod_rank_table", {"X": ([-1, 2], "float32", 1)}, attrs={"level": 1})
    with pytest.raises(ShapeError, match=r"input 'RankTable' \(ranktable_0\) is a lod_tensor "
                                         r"variable(.|\n)*expected: lod_rank_table"):
        build_op("max_sequence_len", {"RankTable": ([1], "int64")})
    prog, op = build_op("lod_rank_table", {"X": ([-1, 2], "float32", 1)})
    assert not op.opdef.differentiable
    assert prog.global_block().var(op.output("Out")[0]).kind == "lod_rank_table"


def _reorder_by_own_table(g, h):
    g.append_op("lod_rank_table", {"X": h}, {"Out": "t"}, {"level": 0})
    g.append_op("reorder_lod_tensor_by_rank", {"X": h, "RankTable": "t"}, {"Out": "o"})
    return g.var("o")


def _reorder_rows(lengths):
    """Rows of h ordered by the table of another LoD tensor (lod_reset of a constant)."""
    def build(g, h):
        g.append_op("fill_constant", {}, {"Out": "c"},
                    {"shape": [sum(lengths), 1], "dtype": 6, "value": 1.0})
        g.create_var(name="seq", shape=[-1, 1], dtype="float64", lod_level=1)
        g.append_op("lod_reset", {"X": "c"}, {"Out": "seq"},
                    {"target_lod": np.cumsum([0] + lengths).tolist()})
        g.append_op("lod_rank_table", {"X": "seq"}, {"Out": "t"}, {"level": 0})
        g.append_op("reorder_lod_tensor_by_rank", {"X": h, "RankTable": "t"}, {"Out": "o"})
        return g.var("o")
    return build


@pytest.mark.parametrize("x", [_seqs([1, 3, 0, 2]), _seqs([0, 0]),
                               Tensor(RNG.standard_normal((6, 2)), [[0, 1, 3], [0, 2, 2, 6]])],
                         ids=["sequences", "all_empty", "nested"])
def test_reorder_gradient_matches_finite_differences(x, lod_grads):
    out = lod_grads(x, _reorder_by_own_table)
    assert len(out.lod) == len(x.lod)


def test_reorder_rows_gradient_matches_finite_differences(lod_grads):
    out = lod_grads(Tensor(RNG.standard_normal((4, 2))), _reorder_rows([1, 3, 0, 2]))
    assert out.lod == []


def test_a_rank_table_program_survives_the_wire_format():
    # Paddle's VarType LOD_RANK_TABLE: a program saved with one loads and runs the same.
    x, _ = TABLES["ties_and_empty"]
    prog = _reorder_program(x, x)
    loaded = hr.Program.parse_from_string(prog.serialize_to_string())
    assert loaded.global_block().var("table").kind == "lod_rank_table"
    feed = {"x": x, "v": x}
    (a,), (b,) = (_run(p, feed, ["out"]) for p in (prog, loaded))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.lod == b.lod
