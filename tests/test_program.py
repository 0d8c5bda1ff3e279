"""Program: nested blocks, the default programs and guards, unique names, clone, to_string."""
import pytest

import headrace
from headrace import ProgramError, unique_name
from headrace.framework import program as program_mod


# -- nested blocks ---------------------------------------------------------------------------

def test_new_program_has_only_the_global_block(prog):
    g = prog.global_block()
    assert prog.num_blocks == 1 and prog.blocks == [g]
    assert prog.current_block() is g and prog.block(0) is g
    assert g.idx == 0 and g.parent_idx == -1 and g.parent is None
    assert prog.desc.blocks[0].parent_idx == -1
    assert prog.desc.version.version == headrace.PROGRAM_VERSION


def test_create_block_nests_under_the_current_block(prog, assert_consistent):
    b1 = prog.create_block()
    b2 = prog.create_block()
    assert prog.current_block() is b2
    assert [b.parent_idx for b in prog.blocks] == [-1, 0, 1]
    assert [d.parent_idx for d in prog.desc.blocks] == [-1, 0, 1]
    assert b2.parent is b1 and b1.parent is prog.global_block()
    prog.rollback()
    assert prog.current_block() is b1
    b3 = prog.create_block()  # a sibling of b2
    assert (b3.idx, b3.parent_idx) == (3, 1)
    prog.rollback()
    prog.rollback()
    assert prog.current_block() is prog.global_block()
    assert prog.num_blocks == 4
    assert [prog.block(i) for i in range(4)] == prog.blocks
    assert_consistent(prog)


def test_create_block_with_an_explicit_parent(prog):
    prog.create_block()
    prog.create_block()
    b = prog.create_block(parent_idx=0)
    assert b.parent_idx == 0 and prog.current_block() is b


@pytest.mark.parametrize("index", [-1, 3, 100, "1", None, 1.0])
def test_block_index_out_of_range(prog, index):
    prog.create_block()
    prog.create_block()
    with pytest.raises(ProgramError, match="out of range.*3 blocks"):
        prog.block(index)


def test_create_block_with_a_bad_parent(prog):
    with pytest.raises(ProgramError, match="out of range"):
        prog.create_block(parent_idx=5)
    assert prog.num_blocks == 1 and len(prog.desc.blocks) == 1


def test_rollback_from_the_global_block(prog):
    with pytest.raises(ProgramError, match="global block"):
        prog.rollback()
    assert prog.current_block_idx == 0


def test_block_guard_rolls_back_also_on_errors(prog):
    with prog.block_guard() as sub:
        assert prog.current_block() is sub and sub.parent_idx == 0
        with prog.block_guard() as inner:
            assert inner.parent is sub
        assert prog.current_block() is sub
    assert prog.current_block() is prog.global_block()
    with pytest.raises(KeyError):
        with prog.block_guard():
            raise KeyError("boom")
    assert prog.current_block_idx == 0 and prog.num_blocks == 4


def test_revision_increases_on_every_change(prog):
    seen = [prog.revision]
    block = prog.global_block()
    x = block.create_var("x", shape=[2], dtype="float32")
    seen.append(prog.revision)
    block.append_op("ident", {"X": x}, {"Out": "y"})
    seen.append(prog.revision)
    x.persistable = True
    seen.append(prog.revision)
    prog.create_block()
    seen.append(prog.revision)
    assert seen == sorted(set(seen))


# -- default programs and guards --------------------------------------------------------------

def test_program_guard_switches_and_restores():
    main0, start0 = headrace.default_main_program(), headrace.default_startup_program()
    main, start, other = headrace.Program(), headrace.Program(), headrace.Program()
    with headrace.program_guard(main, start):
        assert headrace.default_main_program() is main
        assert headrace.default_startup_program() is start
        with headrace.program_guard(other):  # startup left as it is
            assert headrace.default_main_program() is other
            assert headrace.default_startup_program() is start
        assert headrace.default_main_program() is main
    assert headrace.default_main_program() is main0
    assert headrace.default_startup_program() is start0


def test_program_guard_restores_on_exceptions():
    main0, start0 = headrace.default_main_program(), headrace.default_startup_program()
    with pytest.raises(RuntimeError):
        with headrace.program_guard(headrace.Program(), headrace.Program()):
            raise RuntimeError("in the guard")
    assert headrace.default_main_program() is main0
    assert headrace.default_startup_program() is start0


@pytest.mark.parametrize("args", [("not a program",), (None,), ("MAIN", 3)])
def test_program_guard_rejects_non_programs(args):
    main0, start0 = headrace.default_main_program(), headrace.default_startup_program()
    args = tuple(headrace.Program() if a == "MAIN" else a for a in args)
    with pytest.raises(ProgramError, match="Program objects"):
        with headrace.program_guard(*args):
            pass
    assert headrace.default_main_program() is main0
    assert headrace.default_startup_program() is start0


def test_switch_main_program_returns_the_previous_one():
    new = headrace.Program()
    old = program_mod.switch_main_program(new)
    try:
        assert headrace.default_main_program() is new
    finally:
        assert program_mod.switch_main_program(old) is new
    assert headrace.default_main_program() is old


# -- unique names -----------------------------------------------------------------------------

def test_unique_name_guard_gives_fresh_counters_and_restores():
    before = unique_name.generate("fc")
    with unique_name.guard():
        assert [unique_name.generate("fc") for _ in range(2)] == ["fc_0", "fc_1"]
        assert unique_name.generate("conv") == "conv_0"
        with unique_name.guard("inner/"):
            assert unique_name.generate("fc") == "inner/fc_0"
        assert unique_name.generate("fc") == "fc_2"
    n = int(before.rsplit("_", 1)[1])
    assert unique_name.generate("fc") == f"fc_{n + 1}"


def test_unique_name_guard_restores_on_exceptions():
    gen = unique_name.switch(unique_name.UniqueNameGenerator("outer/"))
    try:
        with pytest.raises(ValueError):
            with unique_name.guard():
                raise ValueError
        assert unique_name.generate("a") == "outer/a_0"
    finally:
        unique_name.switch(gen)


def test_generated_var_names_stay_unique_across_guard_resets(prog):
    names = []
    for _ in range(2):
        with unique_name.guard():
            names.append(prog.global_block().create_var(shape=[1]).name)
    sub = prog.create_block()
    with unique_name.guard():
        names.append(sub.create_var(shape=[1]).name)
    assert len(set(names)) == 3
    assert [len(prog.desc.blocks[i].vars) for i in range(2)] == [2, 1]


# -- listing ----------------------------------------------------------------------------------

def test_list_vars_and_all_parameters(prog):
    g = prog.global_block()
    g.create_var("a", shape=[1])
    w = g.create_parameter("w", shape=[2, 2])
    with prog.block_guard() as sub:
        sub.create_var("b", shape=[1])
        b = sub.create_parameter("bias", shape=[2])
    assert [v.name for v in prog.list_vars()] == ["a", "w", "bias", "b"]
    assert prog.all_parameters() == [w, b]
    assert all(isinstance(p, headrace.Parameter) for p in prog.all_parameters())


# -- clone ------------------------------------------------------------------------------------

def _small_program(prog):
    g = prog.global_block()
    x = g.create_var("x", shape=[-1, 4], dtype="float32")
    with headrace.program_guard(prog, headrace.Program()):  # the init op's startup program
        w = g.create_parameter("w", shape=[4], optimize_attr={"learning_rate": 0.5},
                               regularizer="L2", initializer=headrace.initializer.Uniform(-1, 1))
    w.trainable = False
    g.append_op("dropout", {"X": x}, {"Out": "h"})
    g.append_op("ident", {"X": "h"}, {"Out": "y"})
    with prog.block_guard() as sub:
        sub.append_op("ident", {"X": "y"}, {"Out": "z"})
    g.append_op("cond", {"Cond": []}, {}, {"sub_block": sub})
    return prog


def test_clone_is_deep(prog, assert_consistent, snapshot_of):
    _small_program(prog)
    prog.random_seed = 7
    before = prog.serialize_to_string()
    clone = prog.clone()
    assert clone.serialize_to_string() == before and snapshot_of(clone) == snapshot_of(prog)
    assert clone.random_seed == 7 and clone.registry is prog.registry
    cg = clone.global_block()
    cg.var("x").shape = [8, 8]
    cg.var("w").persistable = False
    cg.create_var("extra", shape=[1])
    cg.remove_op(1)
    cg.ops[0].set_attr("dropout_prob", 0.1)
    clone.block(1).append_op("ident", {"X": "z"}, {"Out": "zz"})
    clone.create_block()
    assert prog.serialize_to_string() == before
    assert clone.serialize_to_string() != before
    assert [b.program for b in clone.blocks] == [clone] * 3
    assert cg.var("y").op is None and prog.global_block().var("y").op is not None
    assert_consistent(prog)
    assert_consistent(clone)


def test_clone_carries_parameter_python_state(prog):
    _small_program(prog)
    w = prog.global_block().var("w")
    cw = prog.clone().global_block().var("w")
    assert isinstance(cw, headrace.Parameter) and cw is not w
    assert cw.python_state() == w.python_state()
    assert cw.optimize_attr == {"learning_rate": 0.5} and cw.optimize_attr is not w.optimize_attr
    assert cw.trainable is False and cw.regularizer == "L2"


@pytest.mark.parametrize("role, kept", [(0, True), (256, True), (1, False), (257, False),
                                         (2, False)])
def test_clone_for_test_drops_backward_and_optimize_ops(prog, role, kept):
    g = prog.global_block()
    x = g.create_var("x", shape=[3], dtype="float32")
    g.append_op("dropout", {"X": x}, {"Out": "y"})
    with prog.op_role_guard(role):
        g.append_op("ident", {"X": "y"}, {"Out": "y_role"})
    g.append_op("ident", {"X": "y"}, {"Out": "z"})
    test_prog = prog.clone(for_test=True)
    types = [(op.type, op.output("Out")) for op in test_prog.global_block().ops]
    expected = [("dropout", ["y"])] + ([("ident", ["y_role"])] if kept else []) + \
        [("ident", ["z"])]
    assert types == expected
    assert len(test_prog.desc.blocks[0].ops) == len(expected)
    assert len(prog.global_block().ops) == 3  # the original is untouched


def test_clone_for_test_sets_is_test_where_declared(prog):
    g = prog.global_block()
    x = g.create_var("x", shape=[3], dtype="float32")
    g.append_op("dropout", {"X": x}, {"Out": "y"})
    g.append_op("ident", {"X": "y"}, {"Out": "z"})
    with prog.block_guard() as sub:
        sub.append_op("dropout", {"X": "z"}, {"Out": "w"})
    assert prog.global_block().ops[0].attr("is_test") is False
    test_prog = prog.clone(for_test=True)
    assert test_prog.global_block().ops[0].attr("is_test") is True
    assert test_prog.block(1).ops[0].attr("is_test") is True
    assert not test_prog.global_block().ops[1].has_attr("is_test")
    assert prog.global_block().ops[0].attr("is_test") is False
    assert prog.clone().global_block().ops[0].attr("is_test") is False


# -- text -------------------------------------------------------------------------------------

def test_to_string_is_readable(prog):
    _small_program(prog)
    text = prog.to_string()
    assert str(prog) == text
    for piece in ["2 block(s)", "block 0 (parent -1)", "block 1 (parent 0)",
                  "x : float32[-1, 4]", "w : float32[4]", "parameter", "persistable",
                  "dropout(X=[x])", "Out=[h]", "Mask=[", "ident(X=[h])", "ident(X=[y])",
                  "cond(", "sub_block=block1", "dropout_prob=0.5"]:
        assert piece in text, piece
    assert "op_callstack" not in text and "op_role" not in text
    assert "op_callstack" in prog.to_string(show_bookkeeping=True)
    assert repr(prog) == "<Program blocks=2 ops=4>"
