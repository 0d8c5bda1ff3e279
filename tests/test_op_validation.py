"""Build-time validation of ops against their definitions (with the fake registry).

Every rejected op must (1) raise the right OpError subclass, (2) say which op, block, index and
user source line, and what was expected against what was found, and (3) leave the program
exactly as it was.
"""
import inspect
import re

import pytest

import headrace
from headrace.errors import OpError, OpValidationError, ShapeError, UnknownOpError
from headrace.proto import framework_pb2 as pb

HERE = __file__


@pytest.fixture
def scene(prog):
    """Variables in the global block; two ops in block 1, where the new op goes (op #2)."""
    g = prog.global_block()
    g.create_var("x", shape=[2, 3], dtype="float32")
    g.create_var("x2", shape=[2, 3], dtype="float32")
    g.create_var("v1", shape=[4], dtype="float32")
    g.create_var("i64", shape=[2, 3], dtype="int64")
    g.create_var("feed", type="feed_minibatch", persistable=True)
    sub = prog.create_block()
    sub.append_op("ident", {"X": "x"}, {"Out": "a"})
    sub.append_op("ident", {"X": "a"}, {"Out": "b"})
    return prog, sub


# (op type, inputs, outputs, attrs, error class, message, expected, found)
CASES = {
    "unknown op": ("identt", {"X": "x"}, {"Out": "y"}, None, UnknownOpError,
                   "no plugin registered this op type; did you mean ident",
                   "registered op types", "'identt'"),
    "unknown op, nothing close": ("qqqzzz", {}, {}, None, UnknownOpError,
                                  "no plugin registered this op type$", None, "'qqqzzz'"),
    "missing input": ("ident", {}, {"Out": "y"}, None, OpValidationError,
                      "missing input 'X'", "a variable for slot 'X'", "nothing"),
    "missing output": ("ident", {"X": "x"}, {"Out": []}, None, OpValidationError,
                       "missing output 'Out'", "a variable for slot 'Out'", "nothing"),
    "unknown input slot": ("ident", {"X": "x", "Y": "x"}, {"Out": "y"}, None,
                           OpValidationError, "unknown input slot 'Y'", None, None),
    "unknown output slot": ("ident", {"X": "x"}, {"Out": "y", "Mask": "m"}, None,
                            OpValidationError, "unknown output slot 'Mask'", None, None),
    "two vars, one slot": ("ident", {"X": ["x", "x2"]}, {"Out": "y"}, None, OpValidationError,
                           "input slot 'X' takes one variable", "1 variable",
                           "2: ['x', 'x2']"),
    "two outputs, one slot": ("ident", {"X": "x"}, {"Out": ["y", "z"]}, None,
                              OpValidationError, "output slot 'Out' takes one variable",
                              "1 variable", "2: ['y', 'z']"),
    "undefined input": ("ident", {"X": "nope"}, {"Out": "y"}, None, OpValidationError,
                        "input variable 'nope' \\(slot 'X'\\) is not defined in block 1",
                        None, None),
    "input dtype": ("dropout", {"X": "i64"}, {"Out": "y"}, None, OpValidationError,
                    "input 'X' \\(i64\\) has an unsupported dtype", "float32 or float64",
                    "int64"),
    "not a variable": ("ident", {"X": 3}, {"Out": "y"}, None, OpValidationError,
                       "input slot 'X' must be a Variable or a variable name",
                       "Variable, str", "int 3"),
    "inputs not a dict": ("ident", ["x"], {"Out": "y"}, None, OpValidationError,
                          "inputs must be a dict", None, "list"),
    "attr type": ("dropout", {"X": "x"}, {"Out": "y"}, {"dropout_prob": "high"},
                  OpValidationError, "attribute 'dropout_prob' is not of type float",
                  "float", "'high'"),
    "int for bool": ("dropout", {"X": "x"}, {"Out": "y"}, {"is_test": 1}, OpValidationError,
                     "attribute 'is_test' is not of type bool", "bool", "1"),
    "choices": ("pick", {"X": "x"}, {"Out": "y"}, {"k": 1, "mode": "max"}, OpValidationError,
                "attribute 'mode' must be one of \\['sum', 'mean'\\]",
                "string in ['sum', 'mean']", "'max'"),
    "check": ("dropout", {"X": "x"}, {"Out": "y"}, {"dropout_prob": 1.5}, OpValidationError,
              "attribute 'dropout_prob' must be in \\[0, 1\\]", "float", "1.5"),
    "int32 range": ("pick", {"X": "x"}, {"Out": "y"}, {"k": 2**40}, OpValidationError,
                    "attribute 'k' has a bad value: .* out of range", "int", str(2**40)),
    "missing required attr": ("pick", {"X": "x"}, {"Out": "y"}, {"mode": "mean"},
                              OpValidationError, "missing required attribute 'k'", "int", None),
    "unknown attr": ("ident", {"X": "x"}, {"Out": "y"}, {"foo": 1}, OpValidationError,
                     "unknown attribute 'foo'", None, None),
    "bookkeeping attr type": ("ident", {"X": "x"}, {"Out": "y"}, {"op_role": "forward"},
                              OpValidationError, "attribute 'op_role' is not of type int",
                              "int", "'forward'"),
    "block attr out of range": ("cond", {}, {}, {"sub_block": 7}, OpValidationError,
                                "attribute 'sub_block' .*block 7.*2 blocks", None, None),
    "shape rule": ("concat", {"X": ["x", "v1"]}, {"Out": "y"}, None, ShapeError,
                   "inputs 'X' must have the same rank", "equal ranks", "ranks [2, 1]"),
    "output kind": ("ident", {"X": "x"}, {"Out": "feed"}, None, OpError,
                    "output 'Out' \\(feed\\) is a feed_minibatch variable", "lod_tensor",
                    "feed_minibatch"),
    "buggy rule raises": ("buggy", {}, {"Out": ["o1", "o2"]}, {"bug": "raise"}, OpError,
                          "shape inference raised ZeroDivisionError", None, None),
    "buggy rule dtype": ("buggy", {}, {"Out": ["o1", "o2"]}, {"bug": "dtype"}, OpError,
                         "float13", None, None),
    "buggy rule lod": ("buggy", {}, {"Out": ["o1", "o2"]}, {"bug": "lod"}, OpError,
                       "lod_level", None, None),
    "buggy rule kind": ("buggy", {}, {"Out": ["o1", "o2"]}, {"bug": "kind"}, OpError,
                        "nonsense", None, None),
}


def _attempt(block, op_type, inputs, outputs, attrs, error):
    """Append the op, expecting ``error``; return it and the line of the append_op call."""
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(error) as info:
        block.append_op(op_type, inputs, outputs, attrs)
    return info.value, line


@pytest.mark.parametrize("case", list(CASES))
def test_rejected_ops(scene, case):
    prog, sub = scene
    op_type, inputs, outputs, attrs, error, message, expected, found = CASES[case]
    before, revision = prog.serialize_to_string(), prog.revision
    names = [list(b.vars) for b in prog.blocks]
    err, line = _attempt(sub, op_type, inputs, outputs, attrs, error)
    text = str(err)
    # where: op type, block, index and the user's line (this file)
    assert (err.op_type, err.block_idx, err.op_idx) == (op_type, 1, 2)
    assert text.startswith(f"op '{op_type}' (block 1, op #2): ")
    assert f'File "{HERE}", line {line}, in _attempt' in err.source
    assert "block.append_op(op_type, inputs, outputs, attrs)" in err.source
    assert f"created at: {err.source}" in text
    # what: the reason, what was expected, what was found
    assert re.search(message, err.reason, re.M), err.reason
    for label, want in (("expected", expected), ("found", found)):
        if want is not None:
            assert want in str(getattr(err, label)) and f"  {label}: " in text
    # nothing changed
    assert prog.serialize_to_string() == before and prog.revision == revision
    assert [list(b.vars) for b in prog.blocks] == names
    assert [len(b.ops) for b in prog.blocks] == [0, 2]


def test_unknown_slot_error_lists_the_valid_slots(scene):
    prog, sub = scene
    with pytest.raises(OpValidationError) as info:
        sub.append_op("dropout", {"X": "x", "Seed": "x"}, {"Out": "y"})
    assert info.value.options == ["X"] and "valid options: X" in str(info.value)
    with pytest.raises(OpValidationError) as info:
        sub.append_op("dropout", {"X": "x"}, {"Out": "y"}, {"prob": 0.1})
    assert "valid options: dropout_prob, is_test" in str(info.value)


def test_insert_op_reports_its_own_index(scene):
    prog, sub = scene
    with pytest.raises(UnknownOpError) as info:
        sub.insert_op(1, "nope", {}, {})
    assert info.value.op_idx == 1 and "(block 1, op #1)" in str(info.value)
    with pytest.raises(UnknownOpError) as info:
        prog.global_block().prepend_op("nope", {}, {})
    assert (info.value.block_idx, info.value.op_idx) == (0, 0)


# -- accepted ops --------------------------------------------------------------------------------

def _attrs(op_desc):
    return {a.name: a for a in op_desc.attrs}


def test_defaults_are_filled_into_the_desc(scene, assert_consistent):
    prog, sub = scene
    op = sub.append_op("pick", {"X": "x"}, {"Out": "y"}, {"k": 3})
    line = inspect.currentframe().f_lineno - 1
    a = _attrs(sub.desc.ops[2])
    assert (a["k"].type, a["k"].i) == (pb.INT, 3)
    assert (a["mode"].type, a["mode"].s) == (pb.STRING, "sum")
    assert (a["op_role"].type, a["op_role"].i) == (pb.INT, 0)
    assert a["op_callstack"].type == pb.STRINGS
    assert f'File "{HERE}", line {line}' in a["op_callstack"].strings[0]
    assert op.attr("mode") == "sum" and op.source == a["op_callstack"].strings[0]
    d = _attrs(sub.append_op("dropout", {"X": "x"}, {"Out": "z"}).desc)
    assert (d["dropout_prob"].type, d["dropout_prob"].f) == (pb.FLOAT, 0.5)
    assert (d["is_test"].type, d["is_test"].b) == (pb.BOOLEAN, False)
    assert_consistent(prog)


def test_bookkeeping_attributes_are_accepted(scene, assert_consistent):
    prog, sub = scene
    given = {"op_role": 2, "op_callstack": ["File \"model.py\", line 1"], "op_namescope": "/fc",
             "use_mkldnn": True, "op_role_var": ["w", "w@GRAD"], "op_device": "cpu"}
    with prog.op_role_guard(1):
        op = sub.append_op("ident", {"X": "x"}, {"Out": "y"}, given)
    a = _attrs(op.desc)
    assert a["op_role"].i == 2 and list(a["op_callstack"].strings) == given["op_callstack"]
    assert (a["op_namescope"].type, a["op_namescope"].s) == (pb.STRING, "/fc")
    assert (a["use_mkldnn"].type, a["use_mkldnn"].b) == (pb.BOOLEAN, True)
    assert list(a["op_role_var"].strings) == ["w", "w@GRAD"]
    assert sorted(a) == sorted(given)  # nothing added twice
    with prog.op_role_guard(1):
        assert sub.append_op("ident", {"X": "x"}, {"Out": "z"}).attr("op_role") == 1
    assert_consistent(prog)


def test_intermediate_outputs_are_created(scene, assert_consistent):
    prog, sub = scene
    op = sub.append_op("dropout", {"X": "x"}, {"Out": "y"})
    (mask,) = op.output("Mask")
    assert [s.parameter for s in sub.desc.ops[2].outputs] == ["Out", "Mask"]
    assert mask in sub.vars and sub.var(mask).op is op
    assert (sub.var(mask).shape, sub.var(mask).dtype) == ((2, 3), "uint8")
    given = sub.append_op("dropout", {"X": "x"}, {"Out": "y2", "Mask": "my_mask"})
    assert given.output("Mask") == ["my_mask"] and "my_mask" in sub.vars
    assert_consistent(prog)


def test_duplicable_and_optional_slots(scene, assert_consistent):
    prog, sub = scene
    prog.global_block().var("x2").shape = [5, 3]
    op = sub.append_op("concat", {"X": ["x", prog.global_block().var("x2"), "x"]},
                       {"Out": "cat"})
    assert op.input("X") == ["x", "x2", "x"] and sub.var("cat").shape == (9, 3)
    op = sub.append_op("pick", {"X": "x", "Index": None}, {"Out": "p"}, {"k": 0})
    assert op.input_names == ["X"] and op.input("Index") == []
    assert_consistent(prog)


@pytest.mark.parametrize("sub_block", ["block object", 1])
def test_block_attribute(scene, sub_block, assert_consistent):
    prog, sub = scene
    value = sub if sub_block == "block object" else sub_block
    op = prog.global_block().append_op("cond", {}, {}, {"sub_block": value})
    assert op.attr("sub_block") is sub and op.sub_blocks() == [sub]
    assert _attrs(op.desc)["sub_block"].block_idx == 1
    assert_consistent(prog)


# -- set_attr ----------------------------------------------------------------------------------

def test_set_attr_checks_against_the_definition(scene):
    prog, sub = scene
    op = sub.append_op("pick", {"X": "x"}, {"Out": "y"}, {"k": 3})
    op.set_attr("mode", "mean")
    op.set_attr("op_namescope", "/x")
    assert op.attr("mode") == "mean" and op.attr("op_namescope") == "/x"
    before = prog.serialize_to_string()
    for name, value, message in [("mode", "max", "must be one of"),
                                 ("k", "3", "not of type int"), ("nope", 1, "unknown attribute")]:
        with pytest.raises(OpValidationError, match=message):
            op.set_attr(name, value)
    assert prog.serialize_to_string() == before
    with pytest.raises(OpError, match="has no attribute 'nope'"):
        op.attr("nope")


def test_set_attr_on_an_op_without_definition(prog):
    prog.global_block().create_var("x", shape=[1])
    op = prog.global_block().append_op("ident", {"X": "x"}, {"Out": "y"})
    loaded = headrace.Program.parse_from_string(
        prog.serialize_to_string(),
        registry=headrace.ops.build_registry(autoload=False)).global_block().ops[0]
    assert loaded.opdef is None and op.opdef is not None
    loaded.set_attr("anything", [1, 2])
    assert loaded.attr("anything") == [1, 2] and loaded.attr_type("anything") == "ints"
    before = loaded.block.program.serialize_to_string()
    for bad in (object(), [object()], {"a": 1}):
        with pytest.raises(OpValidationError, match="attribute 'anything2'"):
            loaded.set_attr("anything2", bad)
    with pytest.raises(OpValidationError, match="attribute 'anything'"):
        loaded.set_attr("anything", ["not", "ints"])  # keeps its recorded type
    assert loaded.block.program.serialize_to_string() == before


def test_set_attr_block_must_exist(scene):
    prog, sub = scene
    op = prog.global_block().append_op("cond", {}, {}, {"sub_block": sub})
    before = prog.serialize_to_string()
    for bad in (2, 99, headrace.Program().global_block()):
        with pytest.raises(OpValidationError, match="attribute 'sub_block' points at block"):
            op.set_attr("sub_block", bad)
    assert prog.serialize_to_string() == before
    op.set_attr("sub_block", prog.create_block())
    assert op.attr("sub_block").idx == 2


def test_list_defaults_are_not_shared_between_ops():
    def greedy(ctx):  # a rule that mutates an attribute value it was given
        shape = ctx.attr("shape")
        shape.append(3)
        ctx.set_output("Out", shape, "float32")

    spec = headrace.ops.Attr("shape", "ints", [2])

    class Greedy:
        @staticmethod
        @headrace.ops.hookimpl
        def headrace_register_ops(registry):
            registry.add_op(headrace.ops.OpDef("greedy", outputs=[headrace.ops.Out("Out")],
                                               attrs=[spec], infer=greedy))

    p = headrace.Program(registry=headrace.ops.build_registry(plugins=[Greedy], autoload=False))
    first = p.global_block().append_op("greedy", {}, {"Out": "a"})
    second = p.global_block().append_op("greedy", {}, {"Out": "b"})
    assert spec.default == [2]  # the definition's default is intact
    assert first.attr("shape") == second.attr("shape")
    assert p.global_block().var("a").shape == p.global_block().var("b").shape == (2, 3)
