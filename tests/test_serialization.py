"""Serialization: byte-stable round trips, a ProgramDesc encoded by hand from the reference wire
numbers (what Paddle would write, plus fields of newer versions), and structural validation.

The hand encoder below is independent of framework_pb2: it writes varints, length-delimited
fields, fixed32 floats and fixed64 doubles itself, with the numbers of ir-wire-format.md.
"""
import math
import struct

import pytest

import headrace
from headrace import ProgramParseError
from headrace.proto import framework_pb2 as pb


# -- a tiny protobuf wire encoder ----------------------------------------------------------------

def varint(n):
    n &= (1 << 64) - 1  # negative int32/int64: two's complement in 10 bytes, as protobuf does
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def tag(field, wire_type):
    return varint(field << 3 | wire_type)


def vint(field, n):                                  # wire type 0
    return tag(field, 0) + varint(n)


def f64(field, x):                                   # wire type 1
    return tag(field, 1) + struct.pack("<d", x)


def ld(field, payload):                              # wire type 2
    payload = payload.encode() if isinstance(payload, str) else payload
    return tag(field, 2) + varint(len(payload)) + payload


def f32(field, x):                                   # wire type 5
    return tag(field, 5) + struct.pack("<f", x)


# Enum values of the reference (VarType.Type, AttrType).
BOOL, INT64, FP32, FP64 = 0, 3, 5, 6
LOD_TENSOR, FEED_MINIBATCH, FETCH_LIST, LOD_TENSOR_ARRAY = 7, 9, 10, 13
A_INT, A_FLOAT, A_STRING, A_INTS, A_FLOATS, A_STRINGS, A_BOOLEAN, A_BOOLEANS, A_BLOCK, A_LONG, \
    A_BLOCKS, A_LONGS, A_FLOAT64S, A_VAR, A_VARS, A_FLOAT64, A_SCALAR = range(17)


def tensor(dtype, dims, packed=False):               # TensorDesc
    d = ld(2, b"".join(varint(x) for x in dims)) if packed else b"".join(vint(2, x) for x in dims)
    return vint(1, dtype) + d


def var(name, kind, tensor_desc=None, lod_level=None, extra=b"", **flags):   # VarDesc
    vt = vint(1, kind)
    if tensor_desc is not None:  # LoDTensorDesc (3) or LoDTensorArrayDesc (4)
        inner = ld(1, tensor_desc) + (vint(2, lod_level) if lod_level is not None else b"")
        vt += ld(4 if kind == LOD_TENSOR_ARRAY else 3, inner)
    fields = {"persistable": 3, "need_check_feed": 4, "is_parameter": 5, "stop_gradient": 6}
    return ld(1, name) + ld(2, vt) + b"".join(vint(fields[k], v) for k, v in flags.items()) + extra


def attr(name, type_, *value):                       # OpDesc.Attr
    return ld(1, name) + vint(2, type_) + b"".join(value)


def op(type_, inputs, outputs, attrs=(), extra=b""):  # OpDesc
    def slots(field, d):
        return b"".join(ld(field, ld(1, k) + b"".join(ld(2, a) for a in v)) for k, v in d.items())
    return slots(1, inputs) + slots(2, outputs) + ld(3, type_) + \
        b"".join(ld(4, a) for a in attrs) + extra


def block(idx, parent, vars_=(), ops=(), extra=b"", forward=None):    # BlockDesc
    return vint(1, idx) + vint(2, parent) + b"".join(ld(3, v) for v in vars_) + \
        b"".join(ld(4, o) for o in ops) + (vint(5, forward) if forward is not None else b"") + extra


def program(*blocks, extra=b""):                     # ProgramDesc
    return b"".join(ld(1, b) for b in blocks) + extra


# Fields of "newer versions": the loader must keep them, byte for byte.
UNKNOWN = {
    "program": ld(99, "UNK-PROGRAM") + vint(98, 77),
    "block": ld(99, "UNK-BLOCK"),
    "var": ld(99, "UNK-VAR"),
    "op": ld(99, "UNK-OP"),
    "tensor": f32(7, 1.25),
    "scalar20": ld(20, vint(1, 3) + f64(4, 2.5)),            # a Paddle 3 Scalar
    "scalars21": ld(21, vint(1, 1) + vint(2, 9)) + ld(21, vint(1, 2) + f32(3, 0.5)),
}
CALLSTACK = 'File "train.py", line 3, in <module>\n    y = fc(x)'
BOOKKEEPING = [attr("op_role", A_INT, vint(3, 0)), attr("op_namescope", A_STRING, ld(5, "/fc/")),
               attr("op_callstack", A_STRINGS, ld(8, CALLSTACK)),
               attr("use_mkldnn", A_BOOLEAN, vint(10, 0))]

HAND = program(
    block(0, -1, vars_=[
        var("feed", FEED_MINIBATCH, persistable=1),
        var("fetch", FETCH_LIST, persistable=1),
        var("x", LOD_TENSOR, tensor(FP32, [-1, 784]), lod_level=1, need_check_feed=1,
            extra=UNKNOWN["var"]),
        var("fc_0.w_0", LOD_TENSOR, tensor(FP32, [784, 10], packed=True), persistable=1,
            is_parameter=1),
        var("fc_0.tmp_0", LOD_TENSOR, tensor(FP32, [-1, 10], packed=True) + UNKNOWN["tensor"]),
        var("arr", LOD_TENSOR_ARRAY, tensor(INT64, [-1]), lod_level=2),
        var("flag", LOD_TENSOR, tensor(BOOL, [1]), lod_level=0, stop_gradient=1),
    ], ops=[
        op("feed", {"X": ["feed"]}, {"Out": ["x"]}, [attr("col", A_INT, vint(3, 0))] + BOOKKEEPING),
        op("mul", {"X": ["x"], "Y": ["fc_0.w_0"]}, {"Out": ["fc_0.tmp_0"]}, [
            attr("x_num_col_dims", A_INT, vint(3, 1)),
            attr("alpha", A_FLOAT, f32(4, 0.5)),
            attr("eps", A_FLOAT64, f64(19, 1e-300)),
            attr("big", A_LONG, vint(13, 2**40)),
            attr("longs", A_LONGS, vint(15, -2**40), vint(15, 3)),
            attr("f64s", A_FLOAT64S, f64(16, 0.1), f64(16, -2.5)),
            attr("flags", A_BOOLEANS, vint(11, 1), vint(11, 0), vint(11, 1)),
            attr("names", A_STRINGS, ld(8, "a"), ld(8, "b")),
            attr("ints", A_INTS, vint(6, -1), vint(6, 2)),
            attr("floats", A_FLOATS, f32(7, 1.5)),
            attr("v", A_VAR, ld(17, "x")), attr("vs", A_VARS, ld(18, "x"), ld(18, "arr")),
            attr("scale_s", A_SCALAR, UNKNOWN["scalar20"]),
            attr("scales_s", 17, UNKNOWN["scalars21"]),
        ] + BOOKKEEPING, extra=UNKNOWN["op"]),
        op("dropout", {"X": ["fc_0.tmp_0"]}, {"Out": ["fc_0.tmp_0"]}, [
            attr("dropout_prob", A_FLOAT, f32(4, 0.25)), attr("is_test", A_BOOLEAN, vint(10, 1)),
            attr("fix_seed", A_BOOLEAN, vint(10, 0))] + BOOKKEEPING),
        op("conditional_block", {"Cond": ["flag"], "Input": []}, {"Out": [], "Scope": []},
           [attr("sub_block", A_BLOCK, vint(12, 1)),
            attr("is_scalar_condition", A_BOOLEAN, vint(10, 1))]),
        op("fetch", {"X": ["fc_0.tmp_0"]}, {"Out": ["fetch"]}, [attr("col", A_INT, vint(3, 0))]),
    ]),
    block(1, 0, vars_=[var("tmp", LOD_TENSOR, tensor(FP64, [3, -1]))], ops=[
        op("while_future", {"X": ["tmp", "x"]}, {"Out": ["tmp"]},
           [attr("sub_block", A_BLOCK, vint(12, 2)),
            attr("blocks", A_BLOCKS, vint(14, 2))]),
    ], extra=UNKNOWN["block"]),
    block(2, 1, ops=[op("increment", {"X": ["tmp"]}, {"Out": ["tmp"]},
                        [attr("step", A_FLOAT, f32(4, 1.0))])], forward=1),
    extra=ld(4, vint(1, 7)) + ld(5, ld(1, ld(1, "feed") + ld(2, vint(1, 1)))) + UNKNOWN["program"],
)


@pytest.fixture
def hand(fake_registry):
    return headrace.Program.parse_from_string(HAND, registry=fake_registry)


def test_hand_encoded_blocks(hand):
    assert hand.num_blocks == 3
    assert [(b.idx, b.parent_idx, b.forward_block_idx) for b in hand.blocks] == \
        [(0, -1, -1), (1, 0, -1), (2, 1, 1)]
    assert hand.block(2).parent is hand.block(1)
    assert hand.desc.version.version == 7
    assert hand.desc.op_version_map.pair[0].op_name == "feed"


@pytest.mark.parametrize("name, kind, shape, dtype, lod, flags, cls", [
    ("feed", "feed_minibatch", (), None, 0, {"persistable"}, headrace.Variable),
    ("fetch", "fetch_list", (), None, 0, {"persistable"}, headrace.Variable),
    ("x", "lod_tensor", (-1, 784), "float32", 1, {"need_check_feed"}, headrace.Variable),
    ("fc_0.w_0", "lod_tensor", (784, 10), "float32", 0, {"persistable", "is_parameter"},
     headrace.Parameter),
    ("fc_0.tmp_0", "lod_tensor", (-1, 10), "float32", 0, set(), headrace.Variable),
    ("arr", "lod_tensor_array", (-1,), "int64", 2, set(), headrace.Variable),
    ("flag", "lod_tensor", (1,), "bool", 0, {"stop_gradient"}, headrace.Variable),
])
def test_hand_encoded_vars(hand, name, kind, shape, dtype, lod, flags, cls):
    v = hand.global_block().var(name)
    assert type(v) is cls
    assert (v.kind, v.shape, v.dtype, v.lod_level) == (kind, shape, dtype, lod)
    assert {f for f in ("persistable", "need_check_feed", "is_parameter", "stop_gradient")
            if getattr(v, f)} == flags
    assert list(hand.global_block().vars) == ["feed", "fetch", "x", "fc_0.w_0", "fc_0.tmp_0",
                                              "arr", "flag"]
    assert hand.block(1).var("tmp").shape == (3, -1) and hand.block(1).var("tmp").dtype == \
        "float64"


def test_hand_encoded_ops(hand):
    g = hand.global_block()
    assert [o.type for o in g.ops] == ["feed", "mul", "dropout", "conditional_block", "fetch"]
    feed, mul, dropout, cond, fetch = g.ops
    assert feed.inputs == {"X": ["feed"]} and feed.outputs == {"Out": ["x"]}
    assert mul.inputs == {"X": ["x"], "Y": ["fc_0.w_0"]}
    assert cond.inputs == {"Cond": ["flag"], "Input": []}
    assert mul.opdef is None  # no plugin of the fake registry has it
    assert feed.opdef is hand.registry.get("feed")  # the core's own op, in every registry
    assert dropout.opdef is hand.registry.get("dropout")
    assert dropout.attr("dropout_prob") == 0.25 and dropout.attr("fix_seed") is False
    expected = {"x_num_col_dims": 1, "alpha": 0.5, "eps": 1e-300, "big": 2**40,
                "longs": [-2**40, 3], "f64s": [0.1, -2.5], "flags": [True, False, True],
                "names": ["a", "b"], "ints": [-1, 2], "floats": [1.5], "v": "x",
                "vs": ["x", "arr"], "scale_s": None, "scales_s": None, "op_role": 0,
                "op_namescope": "/fc/", "op_callstack": [CALLSTACK], "use_mkldnn": False}
    assert mul.attrs == expected
    assert mul.attr_type("longs") == "longs" and mul.attr_type("scale_s") is None
    assert mul.source == CALLSTACK and fetch.source is None
    assert cond.attr("sub_block") is hand.block(1) and cond.sub_blocks() == [hand.block(1)]
    loop = hand.block(1).ops[0]
    assert loop.attr("blocks") == [hand.block(2)]
    assert hand.block(2).ops[0].attr("step") == 1.0
    assert g.var("x").op is feed and g.var("fc_0.tmp_0").op is dropout
    assert g.var("fetch").op is fetch


def test_hand_encoded_round_trip_keeps_everything(hand, fake_registry, snapshot_of):
    ours = hand.serialize_to_string()
    # Loading rewrote nothing: exactly what protobuf itself parsed, unknown fields included.
    assert ours == pb.ProgramDesc.FromString(HAND).SerializeToString(deterministic=True)
    for name, raw in UNKNOWN.items():
        assert raw in ours, name
    again = headrace.Program.parse_from_string(ours, registry=fake_registry)
    assert again.serialize_to_string() == ours
    assert snapshot_of(again) == snapshot_of(hand)
    for name, raw in UNKNOWN.items():
        assert raw in again.serialize_to_string(), name


def test_hand_encoded_to_string(hand):
    text = hand.to_string()
    for piece in ["3 block(s)", "block 2 (parent 1, forward block 1)", "x : float32[-1, 784]",
                  "lod_level=1", "fc_0.w_0 : float32[784, 10]  [parameter, persistable]",
                  "arr : int64[-1] (lod_tensor_array) lod_level=2", "feed : feed_minibatch",
                  "Out=[fc_0.tmp_0] = mul(X=[x], Y=[fc_0.w_0])", "sub_block=block1",
                  "scale_s=<attr type 16>", "blocks=block[2]"]:
        assert piece in text, piece


def test_hand_encoded_program_can_be_extended(hand, assert_consistent):
    g = hand.global_block()
    g.append_op("ident", {"X": "fc_0.tmp_0"}, {"Out": "extra"})
    g.var("x").shape = [8, 784]
    assert UNKNOWN["var"] in hand.serialize_to_string()
    assert_consistent(hand)


# -- round trips of programs built with the API ---------------------------------------------------

def _params_and_blocks(prog):
    g = prog.global_block()
    g.create_parameter("w", shape=[3, 4], dtype="float64", trainable=False)
    g.create_var("x", shape=[-1, 3], dtype="float64", lod_level=1, need_check_feed=True)
    g.create_var("feed", type="feed_minibatch", persistable=True)
    with prog.block_guard() as b1:
        b1.append_op("ident", {"X": "x"}, {"Out": "y"})
        with prog.block_guard() as b2:
            b2.append_op("dropout", {"X": "y"}, {"Out": "z"})
        b1.append_op("cond", {}, {}, {"sub_block": b2})
    g.append_op("cond", {"Cond": "x"}, {"Out": "x"}, {"sub_block": b1})


def _all_attr_types(prog, extreme=False):
    big = 2**63 - 1 if extreme else 7
    values = {
        "a_int": -2**31 if extreme else 3, "a_float": 3.0e38 if extreme else 0.25,
        "a_string": "héllo\n\x00" if extreme else "s", "a_ints": [2**31 - 1, -2**31, 0],
        "a_floats": [math.inf, -0.0, 1e-45], "a_strings": ["", "ü", "x" * 300],
        "a_bool": True, "a_bools": [True, False, False], "a_long": -big,
        "a_longs": [big, -big - 1 if extreme else -1], "a_float64s": [1e-300, -1e300, 0.1],
        "a_float64": 5e-324 if extreme else 0.1, "a_var": "x", "a_vars": ["x", "y"],
    }
    prog.global_block().append_op("all_attrs", {}, {"Out": "o"}, values)
    prog.global_block().append_op("all_attrs", {}, {"Out": "o2"})  # all defaults, empty lists


BUILDERS = {
    "empty": lambda prog: None,
    "params and nested blocks": _params_and_blocks,
    "all attr types": _all_attr_types,
    "extreme attr values": lambda prog: _all_attr_types(prog, extreme=True),
    "everything": lambda prog: (_params_and_blocks(prog), _all_attr_types(prog, True)),
}


@pytest.mark.parametrize("builder", list(BUILDERS))
def test_serialize_parse_serialize_is_identical(prog, fake_registry, builder, snapshot_of):
    BUILDERS[builder](prog)
    data = prog.serialize_to_string()
    again = headrace.Program.parse_from_string(data, registry=fake_registry)
    assert again.serialize_to_string() == data
    assert snapshot_of(again) == snapshot_of(prog)
    assert headrace.Program.parse_from_string(bytearray(data), fake_registry) \
        .serialize_to_string() == data
    assert headrace.Program.parse_from_string(memoryview(data), fake_registry) \
        .serialize_to_string() == data


def test_attr_values_survive_exactly(prog, fake_registry):
    _all_attr_types(prog, extreme=True)
    op = headrace.Program.parse_from_string(prog.serialize_to_string(), fake_registry) \
        .global_block().ops[0]
    assert op.attr("a_long") == -(2**63 - 1) and op.attr("a_longs") == [2**63 - 1, -2**63]
    assert op.attr("a_float64") == 5e-324 and op.attr("a_float64s") == [1e-300, -1e300, 0.1]
    assert op.attr("a_floats")[0] == math.inf and math.copysign(1, op.attr("a_floats")[1]) < 0
    assert op.attr("a_string") == "héllo\n\x00" and op.attr("a_strings")[1] == "ü"
    assert op.attr("a_bools") == [True, False, False]
    assert [op.attr_type(n) for n in ("a_long", "a_float64", "a_vars")] == \
        ["long", "float64", "vars"]


# -- structural validation -------------------------------------------------------------------

G = block(0, -1, vars_=[var("x", LOD_TENSOR, tensor(FP32, [2]))])


def _with_op(*attrs, inputs=None, outputs=None, type_="any_op"):
    return program(block(0, -1, ops=[op(type_, inputs or {}, outputs or {}, attrs)]),
                   block(1, 0))


BAD = {
    "empty bytes": (b"", "no blocks"),
    "only a version": (ld(4, vint(1, 1)), "no blocks"),
    "parent out of range": (program(G, block(1, 5)), "block 1: parent_idx 5 must name an earlier"),
    "parent is itself": (program(G, block(1, 1)), "block 1: parent_idx 1"),
    "negative parent": (program(G, block(1, -1)), "block 1: parent_idx -1"),
    "global block with a parent": (program(block(0, 0)), "global block must have parent_idx -1"),
    "no parent_idx": (program(vint(1, 0)), "block 0: no parent_idx"),
    "idx mismatch": (program(G, block(2, 0)), "block 1: its idx field says 2"),
    "forward block out of range": (program(G, block(1, 0, forward=4)), "forward_block_idx 4"),
    "block attr out of range": (_with_op(attr("sub_block", A_BLOCK, vint(12, 2))),
                                "attribute 'sub_block' points at block 2, but the program has 2"),
    "negative block attr": (_with_op(attr("sub_block", A_BLOCK, vint(12, -1))), "block -1"),
    "blocks attr out of range": (_with_op(attr("bs", A_BLOCKS, vint(14, 0), vint(14, 9))),
                                 "attribute 'bs' points at block 9"),
    "var without type": (program(block(0, -1, vars_=[ld(1, "v")])), "variable 'v': no type"),
    "var type without kind": (program(block(0, -1, vars_=[ld(1, "v") + ld(2, b"")])),
                              "variable 'v': no type"),
    "var without name": (program(block(0, -1, vars_=[ld(2, vint(1, LOD_TENSOR))])),
                         "variable without a name"),
    "duplicate var": (program(block(0, -1, vars_=[var("v", FETCH_LIST), var("v", FETCH_LIST)])),
                      "block 0: variable 'v' is declared twice"),
    "tensor without dtype": (program(block(0, -1, vars_=[var("v", LOD_TENSOR, vint(2, 3))])),
                             "variable 'v': tensor description has no data_type"),
    "lod tensor without tensor": (program(block(0, -1, vars_=[
        ld(1, "v") + ld(2, vint(1, LOD_TENSOR) + ld(3, vint(2, 1)))])), "without a tensor"),
    "dims below -1": (program(block(0, -1, vars_=[var("v", LOD_TENSOR, tensor(FP32, [2, -3]))])),
                      "dims [2, -3] has -3"),
    "negative lod_level": (program(block(0, -1, vars_=[
        var("v", LOD_TENSOR_ARRAY, tensor(FP32, [2]), lod_level=-2)])), "negative lod_level -2"),
    "op without type": (program(block(0, -1, ops=[ld(1, ld(1, "X"))])),
                        "block 0, op #0: operator without a type"),
    "slot without name": (program(block(0, -1, ops=[ld(2, ld(2, "x")) + ld(3, "t")])),
                          "op #0 ('t'): an output slot without a name"),
    "empty argument": (_with_op(inputs={"X": ["a", ""]}), "input slot 'X' binds an empty"),
    "attr without type": (_with_op(ld(1, "a")), "an attribute without name or type"),
    "attr without name": (_with_op(vint(2, A_INT)), "an attribute without name or type"),
    "var attr without type": (program(block(0, -1, vars_=[var("v", FETCH_LIST, extra=ld(
        7, ld(1, "a")))])), "variable 'v': an attribute without name or type"),
    "non-utf8 var name": (program(block(0, -1, vars_=[var(b"v\xff", FETCH_LIST)])), "UTF-8"),
    "non-utf8 op type": (_with_op(type_=b"op\xfe"), "UTF-8"),
    "non-utf8 argument": (_with_op(outputs={"Out": [b"\xc3("]}), "UTF-8"),
    "wire garbage": (b"\x0a\x05\x08", "not a ProgramDesc"),
    "wrong wire type deep down": (program(block(0, -1, vars_=[ld(1, "v") + ld(2, ld(1, b"z"))])),
                                  "variable 'v': no type"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_structural_errors(case, fake_registry):
    data, message = BAD[case]
    with pytest.raises(ProgramParseError) as info:
        headrace.Program.parse_from_string(data, registry=fake_registry)
    assert message in str(info.value)


@pytest.mark.parametrize("data", ["a string", None, 12, [1, 2]])
def test_parse_needs_bytes(data):
    with pytest.raises(ProgramParseError, match="expected bytes"):
        headrace.Program.parse_from_string(data)


def test_from_desc_validates_and_copies(fake_registry):
    desc = pb.ProgramDesc.FromString(HAND)
    prog = headrace.Program.from_desc(desc, fake_registry)
    prog.global_block().var("x").shape = [1, 784]
    assert desc.SerializeToString(deterministic=True) == \
        pb.ProgramDesc.FromString(HAND).SerializeToString(deterministic=True)
    desc.blocks[1].parent_idx = 3
    with pytest.raises(ProgramParseError, match="parent_idx 3"):
        headrace.Program.from_desc(desc, fake_registry)
