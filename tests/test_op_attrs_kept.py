"""Operator.attrs is kept decoded beside the desc (Block's commit writes it from the entries it
merges into the OpDesc; a parsed op decodes its desc once): it must always read what decoding
the desc reads, value and type, and follow set_attr/remove_attr."""
import math
import struct

import pytest

import headrace
from headrace.ops import attrs as attr_codec


def _decoded(op):
    """What the OpDesc itself holds, decoded now (the first value of a repeated name)."""
    out = {}
    for msg in op.desc.attrs:
        if msg.name not in out:
            out[msg.name] = attr_codec.decode(msg)[1]
    return out


def _same(a, b):
    """Equal values of equal types, floats bit for bit (NaN and -0.0 included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b


def _assert_reads_desc(op):
    got, want = op.attrs, _decoded(op)
    assert list(got) == list(want)
    for name in want:
        assert _same(got[name], want[name]), (name, got[name], want[name])
        assert _same(op.attr(name), want[name]), name
        assert op.has_attr(name)
    assert not op.has_attr("no_such_attr")


VALUES = dict(a_int=-7, a_float=0.1, a_string="s\u00e9", a_ints=[1, -2], a_floats=[0.1, -0.0],
              a_strings=["x", ""], a_bool=True, a_bools=[True, False], a_long=2**40,
              a_longs=[-2**40], a_float64s=[0.1], a_float64=0.1, a_var="v", a_vars=["v", "w"])


@pytest.mark.parametrize("given", [{}, VALUES, dict(a_float=-0.0, a_floats=[math.inf, 1e-45]),
                                   dict(a_float=3, a_float64=2, a_floats=[1])])
def test_a_built_op_reads_what_its_desc_decodes_to(prog, given):
    op = prog.global_block().append_op("all_attrs", {}, {"Out": "y"}, dict(given))
    assert op._attrs_kept is not None   # kept from the commit, not decoded from the desc
    _assert_reads_desc(op)
    # float32 on the wire: 0.1 reads back rounded, as a parsed program reads it
    if given.get("a_float") == 0.1:
        assert op.attr("a_float") == struct.unpack("<f", struct.pack("<f", 0.1))[0] != 0.1
        assert op.attr("a_float64") == 0.1
    if "a_float" in given and type(given["a_float"]) is int:
        assert type(op.attr("a_float")) is float and type(op.attr("a_floats")[0]) is float


def test_kept_attrs_equal_a_parsed_programs(prog):
    block = prog.global_block()
    block.append_op("all_attrs", {}, {"Out": "y"}, dict(VALUES))
    block.append_op("dropout", {"X": "y"}, {"Out": "z"}, {"dropout_prob": 0.3})
    again = headrace.Program.parse_from_string(prog.serialize_to_string(),
                                               registry=prog.registry)
    for op, twin in zip(block.ops, again.global_block().ops):
        assert twin._attrs_kept is None
        _assert_reads_desc(twin)   # decoded, then kept
        assert twin._attrs_kept is not None
        assert list(op.attrs) == list(twin.attrs)
        for name, value in op.attrs.items():
            assert _same(value, twin.attrs[name]), name
        _assert_reads_desc(twin)   # kept


def test_attrs_follow_set_attr_and_remove_attr(prog):
    block = prog.global_block()
    op = block.append_op("all_attrs", {}, {"Out": "y"}, {"a_int": 1, "a_ints": [1, 2]})
    assert op.attrs["a_int"] == 1
    op.set_attr("a_int", 5)
    op.set_attr("a_floats", [0.1])
    op.set_attr("op_role_var", ["p", "p@GRAD"])   # a new one: merged in, kept
    assert op._attrs_kept is not None and list(op.attrs)[-1] == "op_role_var"
    assert op.attr("a_int") == 5 and op.attrs["a_int"] == 5
    assert op.attrs["a_floats"] == [struct.unpack("<f", struct.pack("<f", 0.1))[0]]
    _assert_reads_desc(op)
    op.remove_attr("a_int")
    assert "a_int" not in op.attrs and not op.has_attr("a_int")
    _assert_reads_desc(op)
    again = headrace.Program.parse_from_string(prog.serialize_to_string(),
                                               registry=prog.registry)
    twin = again.global_block().ops[0]
    assert twin.attrs["a_ints"] == [1, 2]
    twin.set_attr("a_ints", [3])
    assert twin.attrs["a_ints"] == [3]
    _assert_reads_desc(twin)


def test_what_attrs_gives_can_be_changed_without_changing_the_op(prog):
    block = prog.global_block()
    a = block.append_op("all_attrs", {}, {"Out": "y"}, {"a_ints": [1, 2]})
    b = block.append_op("all_attrs", {}, {"Out": "z"}, {"a_ints": [1, 2]})
    got = a.attrs
    got["a_ints"].append(3)
    got["a_int"] = 9
    a.attr("a_ints").append(4)
    assert a.attrs["a_ints"] == [1, 2] and a.attrs["a_int"] == 0
    assert b.attrs["a_ints"] == [1, 2]   # one entry, kept by both ops: not shared out
    _assert_reads_desc(a)


def test_an_op_with_a_block_attribute_gives_the_block(prog):
    block = prog.global_block()
    sub = prog.create_block()
    prog.rollback()
    op = block.append_op("cond", {}, {}, {"sub_block": sub})
    assert op._attrs_kept is None   # Block objects are read from the desc each time
    assert op.attrs["sub_block"] is sub and op.attr("sub_block") is sub
    assert op.sub_blocks() == [sub]
