"""Block: variable lookup through ancestors, parameters, re-declaration, and op lists that stay
in step with the BlockDesc through insert/prepend/remove."""
import pytest

import headrace
from headrace import VariableError


def _var_names(desc):
    return [v.name for v in desc.vars]


def _assert_ops_match_desc(block):
    """block.ops and block.desc.ops: same length, same order, same types and names."""
    assert len(block.ops) == len(block.desc.ops)
    for op, d in zip(block.ops, block.desc.ops):
        assert op.type == d.type
        assert op.inputs == {s.parameter: list(s.arguments) for s in d.inputs}
        assert op.outputs == {s.parameter: list(s.arguments) for s in d.outputs}


# -- lookup -----------------------------------------------------------------------------------

@pytest.fixture
def tree(prog):
    """block 0 <- 1 <- 2, and block 3 a sibling of block 1 (both children of 0)."""
    g = prog.global_block()
    g.create_var("g_var", shape=[1])
    b1 = prog.create_block()
    b1.create_var("b1_var", shape=[1])
    b1.create_var("shadow", shape=[1], dtype="int64")
    b2 = prog.create_block()
    b2.create_var("b2_var", shape=[1])
    prog.rollback()
    prog.rollback()
    b3 = prog.create_block()
    b3.create_var("b3_var", shape=[1])
    prog.rollback()
    g.create_var("shadow", shape=[1], dtype="float32")
    return prog, g, b1, b2, b3


@pytest.mark.parametrize("block_idx, name, owner", [
    (2, "b2_var", 2), (2, "b1_var", 1), (2, "g_var", 0), (1, "g_var", 0),
    (2, "shadow", 1), (1, "shadow", 1), (3, "shadow", 0), (0, "shadow", 0), (3, "b3_var", 3),
])
def test_lookup_goes_through_ancestors(tree, block_idx, name, owner):
    prog = tree[0]
    block = prog.block(block_idx)
    assert block.find_var(name) is prog.block(owner).var(name)
    assert block.var_recursive(name) is prog.block(owner).var(name)
    assert block.var_recursive(name).block is prog.block(owner)


@pytest.mark.parametrize("block_idx, name", [
    (3, "b1_var"), (3, "b2_var"), (1, "b3_var"), (2, "b3_var"), (1, "b2_var"), (0, "b1_var"),
    (0, "nowhere"),
])
def test_siblings_and_descendants_are_invisible(tree, block_idx, name):
    block = tree[0].block(block_idx)
    assert block.find_var(name) is None
    assert not block.has_var(name)
    with pytest.raises(VariableError, match=f"'{name}' is not defined in block {block_idx}"):
        block.var_recursive(name)
    with pytest.raises(VariableError, match=f"block {block_idx} has no variable"):
        block.var(name)


def test_var_does_not_look_in_ancestors(tree):
    _, _, _, b2, _ = tree
    with pytest.raises(VariableError):
        b2.var("g_var")


# -- parameters -------------------------------------------------------------------------------

def test_create_parameter_from_a_sub_block_lands_in_the_global_block(prog, assert_consistent):
    with prog.block_guard() as sub:
        with prog.block_guard() as inner:
            w = inner.create_parameter("w", shape=[3, 4], dtype="float64")
    g = prog.global_block()
    assert isinstance(w, headrace.Parameter) and w.block is g
    assert g.var("w") is w and "w" not in sub.vars and "w" not in inner.vars
    assert _var_names(prog.desc.blocks[0]) == ["w"]
    assert _var_names(prog.desc.blocks[1]) == [] and _var_names(prog.desc.blocks[2]) == []
    assert inner.find_var("w") is w and sub.var_recursive("w") is w
    d = prog.desc.blocks[0].vars[0]
    assert d.is_parameter and d.persistable and list(d.type.lod_tensor.tensor.dims) == [3, 4]
    assert w.shape == (3, 4) and w.dtype == "float64" and w.trainable
    assert inner.create_parameter("w", shape=[3, 4], dtype="float64") is w
    assert len(prog.desc.blocks[0].vars) == 1
    assert_consistent(prog)


@pytest.mark.parametrize("kwargs", [
    dict(shape=[3, 5]), dict(shape=[3, 4], dtype="float32"), dict(shape=[3, 4], lod_level=1),
])
def test_conflicting_parameter_redeclaration(prog, kwargs):
    prog.global_block().create_parameter("w", shape=[3, 4], dtype="float64")
    before = prog.serialize_to_string()
    with pytest.raises(VariableError, match="'w' is re-declared"):
        prog.create_block().create_parameter("w", **kwargs)
    assert prog.desc.blocks[0] == headrace.Program.parse_from_string(
        before, registry=prog.registry).desc.blocks[0]


@pytest.mark.parametrize("shape", [None, [-1, 3], [None, 2]])
def test_parameter_needs_a_known_shape(prog, shape):
    with pytest.raises(VariableError, match="fully known shape"):
        prog.global_block().create_parameter("w", shape=shape)
    assert len(prog.desc.blocks[0].vars) == 0 and not prog.global_block().vars


def test_parameter_name_taken_by_a_plain_variable(prog):
    prog.global_block().create_var("w", shape=[2])
    with pytest.raises(VariableError, match="non-parameter"):
        prog.global_block().create_parameter("w", shape=[2])


# -- declaration --------------------------------------------------------------------------------

def test_redeclaring_returns_the_same_variable(prog, assert_consistent):
    g = prog.global_block()
    x = g.create_var("x", shape=[2, 3], dtype="float32", lod_level=1)
    for kwargs in [{}, dict(shape=[2, 3]), dict(dtype="float32"), dict(shape=(2, 3), lod_level=1),
                   dict(dtype="fp32", persistable=True)]:
        assert g.create_var("x", **kwargs) is x
    assert _var_names(prog.desc.blocks[0]) == ["x"]
    assert x.persistable is False  # a re-declaration does not change the variable
    assert_consistent(prog)


@pytest.mark.parametrize("kwargs, what", [
    (dict(shape=[2, 4]), "shape"), (dict(shape=[2]), "shape"), (dict(dtype="int64"), "dtype"),
    (dict(type="lod_tensor_array"), "kind"), (dict(lod_level=2), "lod_level"),
])
def test_conflicting_redeclaration(prog, kwargs, what):
    g = prog.global_block()
    g.create_var("x", shape=[2, 3], dtype="float32", lod_level=1)
    before = prog.serialize_to_string()
    with pytest.raises(VariableError, match=f"'x' is re-declared in block 0.*{what}"):
        g.create_var("x", **kwargs)
    assert prog.serialize_to_string() == before and list(g.vars) == ["x"]


@pytest.mark.parametrize("kwargs", [
    dict(type="no_such_kind"), dict(dtype="float13"), dict(shape=[2, "a"]), dict(shape=3),
    dict(shape=[1.5]), dict(shape=[2**63]), dict(lod_level=-1), dict(lod_level="1"), dict(name=""),
    dict(name=5),
])
def test_a_rejected_declaration_changes_nothing(prog, kwargs):
    g = prog.global_block()
    g.create_var("keep", shape=[1])
    before, revision = prog.serialize_to_string(), prog.revision
    kwargs.setdefault("name", "x")
    with pytest.raises(VariableError):
        g.create_var(**kwargs)
    assert prog.serialize_to_string() == before and list(g.vars) == ["keep"]
    assert prog.revision == revision


@pytest.mark.parametrize("kind", ["lod_tensor", "lod_tensor_array", "selected_rows",
                                  "feed_minibatch", "fetch_list", "step_scopes", "reader"])
def test_every_kind_can_be_declared(prog, kind, assert_consistent):
    v = prog.global_block().create_var("v", shape=[2], dtype="int32", type=kind)
    assert v.kind == kind == v.type
    tensor = kind in ("lod_tensor", "lod_tensor_array", "selected_rows")
    assert (v.shape, v.dtype) == (((2,), "int32") if tensor else ((), None))
    assert_consistent(prog)


def test_remove_var(prog, assert_consistent):
    g = prog.global_block()
    for n in "abc":
        g.create_var(n, shape=[1])
    g.remove_var("b")
    assert list(g.vars) == ["a", "c"] == _var_names(g.desc)
    with pytest.raises(VariableError):
        g.remove_var("b")
    assert_consistent(prog)


# -- ops ----------------------------------------------------------------------------------------

def _op_program(prog):
    g = prog.global_block()
    g.create_var("x", shape=[2], dtype="float32")
    for out in ("a", "b", "c"):
        g.append_op("ident", {"X": "x"}, {"Out": out})
    return g


@pytest.mark.parametrize("action, expected", [
    (lambda g: g.prepend_op("ident", {"X": "x"}, {"Out": "p"}), "pabc"),
    (lambda g: g.insert_op(1, "ident", {"X": "x"}, {"Out": "p"}), "apbc"),
    (lambda g: g.insert_op(3, "ident", {"X": "x"}, {"Out": "p"}), "abcp"),
    (lambda g: g.insert_op(99, "ident", {"X": "x"}, {"Out": "p"}), "abcp"),
    (lambda g: g.insert_op(-1, "ident", {"X": "x"}, {"Out": "p"}), "abpc"),  # as list.insert
    (lambda g: g.insert_op(-3, "ident", {"X": "x"}, {"Out": "p"}), "pabc"),
    (lambda g: g.insert_op(-99, "ident", {"X": "x"}, {"Out": "p"}), "pabc"),
    (lambda g: g.append_op("ident", {"X": "x"}, {"Out": "p"}), "abcp"),
    (lambda g: g.remove_op(0), "bc"),
    (lambda g: g.remove_op(1), "ac"),
    (lambda g: g.remove_op(-1), "ab"),
    (lambda g: (g.remove_op(1), g.insert_op(1, "ident", {"X": "x"}, {"Out": "p"}),
                g.prepend_op("ident", {"X": "x"}, {"Out": "q"}), g.remove_op(3)), "qap"),
])
def test_op_list_and_desc_stay_in_step(prog, action, expected, assert_consistent):
    g = _op_program(prog)
    action(g)
    assert [op.output("Out")[0] for op in g.ops] == list(expected)
    assert [d.outputs[0].arguments[0] for d in g.desc.ops] == list(expected)
    assert [op.idx for op in g.ops] == list(range(len(expected)))
    _assert_ops_match_desc(g)
    assert_consistent(prog)


def test_op_index_normalization_matches_list_insert(prog):
    g = _op_program(prog)
    model = list("abc")
    for i, index in enumerate([-1, 0, -2, 10, 2, -10]):
        name = f"n{i}"
        g.insert_op(index, "ident", {"X": "x"}, {"Out": name})
        model.insert(index, name)
        assert [op.output("Out")[0] for op in g.ops] == model
    _assert_ops_match_desc(g)


def test_variable_op_is_the_writer_and_recomputed_after_remove(prog, assert_consistent):
    g = prog.global_block()
    x = g.create_var("x", shape=[2], dtype="float32")
    assert x.op is None
    first = g.append_op("ident", {"X": x}, {"Out": "y"})
    y = g.var("y")
    assert y.op is first
    second = g.append_op("ident", {"X": x}, {"Out": "y"})
    assert y.op is second
    g.append_op("ident", {"X": "y"}, {"Out": "z"})
    g.remove_op(1)  # the last writer goes: the earlier one writes y again
    assert y.op is first and g.var("z").op is g.ops[1]
    g.remove_op(0)
    assert y.op is None
    assert_consistent(prog)


def test_prepending_a_writer_keeps_the_last_writer(prog):
    g = prog.global_block()
    g.create_var("x", shape=[2], dtype="float32")
    last = g.append_op("ident", {"X": "x"}, {"Out": "y"})
    early = g.prepend_op("ident", {"X": "x"}, {"Out": "y"})
    assert g.var("y").op is last
    g.remove_op(1)
    assert g.var("y").op is early


def test_inserting_takes_only_the_outputs_no_later_op_writes(prog):
    # The commit looks for the new op's own outputs among the later ops (not every later
    # op's outputs): found ones keep their writer, the others take the new op; also over
    # ops of a parsed program, whose slots are not decoded yet.
    g = prog.global_block()
    g.create_var("x", shape=[2], dtype="float32")
    last = g.append_op("ident", {"X": "x"}, {"Out": "y"})
    g.append_op("ident", {"X": "x"}, {"Out": "w"})
    mid = g.insert_op(1, "ident", {"X": "x"}, {"Out": "z"})
    assert g.var("y").op is last and g.var("z").op is mid
    parsed = type(prog).parse_from_string(prog.serialize_to_string(), registry=prog.registry)
    pg = parsed.global_block()
    assert all(op._io_cache is None for op in pg.ops)
    writer_y = pg.var("y").op
    early = pg.prepend_op("ident", {"X": "x"}, {"Out": "y"})
    assert pg.var("y").op is writer_y and writer_y is not early
    new = pg.insert_op(2, "ident", {"X": "x"}, {"Out": "v"})
    assert pg.var("v").op is new and pg.var("w").op is pg.ops[-1]


def test_built_ops_and_variables_have_the_fields_their_constructors_set(prog):
    # The compiled commit sets Operator.__init__'s and Variable.__init__'s fields itself
    # (without their frames): a field added there must be set there too.
    from headrace.framework.operator import Operator
    from headrace.framework.variable import Variable
    g = prog.global_block()
    g.create_var("x", shape=[2], dtype="float32")
    op = g.append_op("ident", {"X": "x"}, {"Out": "made"})
    made = g.var("made")
    assert type(made) is Variable and made.name == "made" and made.op is op
    assert set(vars(op)) == set(vars(Operator._wrap(g, op.desc, op.opdef)))
    assert set(vars(made)) == set(vars(Variable._wrap(g, made.desc)))
    assert op._io_cache[:2] == [[("X", ("x",))], [("Out", ("made",))]]


def test_writer_of_a_parent_variable_from_a_sub_block(prog):
    g = prog.global_block()
    g.create_var("x", shape=[2], dtype="float32")
    with prog.block_guard() as sub:
        op = sub.append_op("ident", {"X": "x"}, {"Out": "x_out"})
        g.create_var("shared", shape=[2], dtype="float32")
        w = sub.append_op("ident", {"X": "x"}, {"Out": "shared"})
    assert "x_out" in sub.vars and "x_out" not in g.vars
    assert sub.var("x_out").op is op and g.var("shared").op is w
    assert len(g.desc.vars) == 2 and "shared" not in sub.vars


def test_intermediate_and_new_outputs_are_created_in_the_current_block(prog, assert_consistent):
    g = prog.global_block()
    g.create_var("x", shape=[-1, 5], dtype="float64")
    with prog.block_guard() as sub:
        op = sub.append_op("dropout", {"X": "x"}, {"Out": "y"})
    mask = op.output("Mask")
    assert len(mask) == 1 and mask[0] in sub.vars and mask[0].startswith("dropout.mask")
    assert sub.var(mask[0]).dtype == "uint8" and sub.var(mask[0]).shape == (-1, 5)
    assert sub.var("y").shape == (-1, 5) and sub.var("y").dtype == "float64"
    assert _var_names(prog.desc.blocks[1]) == ["y", mask[0]]
    assert_consistent(prog)


@pytest.mark.parametrize("names", [("x", "y"), ("x\u00e9\u4e2d", "y" * 300), ("x", "bad\udcff")])
def test_an_appended_ops_desc_equals_an_inserted_ones(prog, names):
    # An appended op's OpDesc is written as one piece of wire bytes (framework/_build.pyx); an
    # inserted one, and one with a name UTF-8 cannot encode, field by field: the same desc.
    x, y = names
    g = prog.global_block()
    g.create_var(x, shape=[2], dtype="float32")
    g.create_var("z", shape=[2], dtype="float32")
    g.append_op("ident", {"X": "z"}, {"Out": "w"})
    kinds = [("dropout", {"X": x}, {"Out": y, "Mask": y + "m"}, {"dropout_prob": 0.25}),
             ("concat", {"X": [x, x, "z"]}, {"Out": y + "2"}, {"axis": 0}),
             ("all_attrs", {}, {"Out": y + "3"}, {"a_ints": [1, 2], "a_strings": ["s", ""]})]
    def add(index, op_type, ins, outs, attrs):   # one source line (op_callstack) for both
        return g.insert_op(index, op_type, ins, outs, attrs)

    for kind in kinds:
        try:
            appended = add(len(g.ops), *kind)
        except Exception as e:   # the surrogate: refused by protobuf itself, as before
            assert "\udcff" in y and type(e).__name__ != "OpValidationError"
            return
        inserted = add(len(g.ops) - 1, *kind)
        assert inserted.desc.SerializeToString() == appended.desc.SerializeToString()
        assert inserted.desc == appended.desc
    _assert_ops_match_desc(g)
