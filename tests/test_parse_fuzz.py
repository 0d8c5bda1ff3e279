"""Fuzzing Program.parse_from_string: whatever the bytes, the result is a Program (which can be
printed, serialized and loaded again) or a ProgramParseError -- never any other exception.

Inputs: random bytes; truncations of valid programs at every offset and at random ones; byte
flips; and valid protobuf encodings of the wrong shape (random field numbers and wire types,
length-delimited where a varint belongs, deep nesting, schema-shaped messages with wrong parts).
"""
import random
import struct

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import headrace
from headrace import ProgramParseError
from headrace.ops import Attr, In, OpDef, Out, build_registry, hookimpl
from headrace.ops.shape import same_as


class _FuzzOps:
    @staticmethod
    @hookimpl
    def headrace_register_ops(registry):
        registry.add_op(OpDef("ident", inputs=[In("X")], outputs=[Out("Out")],
                              attrs=[Attr("is_test", "bool", False)], infer=same_as("X")))
        registry.add_op(OpDef("cond", outputs=[Out("Out", optional=True)],
                              attrs=[Attr("sub_block", "block"), Attr("ls", "longs", [])],
                              no_kernel=True))


REG = build_registry(plugins=[("fuzz-ops", _FuzzOps)], autoload=False)
FUZZ = settings(max_examples=3000, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def check(data):
    """The property: a Program that round-trips, or a ProgramParseError."""
    try:
        prog = headrace.Program.parse_from_string(data, registry=REG)
    except ProgramParseError as e:
        assert str(e)
        return None
    out = prog.serialize_to_string()
    prog.to_string(show_bookkeeping=True)
    for block in prog.blocks:
        for op in block.ops:
            op.attrs, op.sub_blocks(), op.inputs, op.outputs
        for v in block.vars.values():
            v.shape, v.dtype, v.lod_level, v.meta()
    again = headrace.Program.parse_from_string(out, registry=REG)  # our own output loads
    assert again.serialize_to_string() == out
    return prog


# -- encoding helpers (independent of framework_pb2) ------------------------------------------

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, wire_type, payload):
    key = varint(number << 3 | wire_type)
    if wire_type == 0:
        return key + varint(payload)
    if wire_type == 2:
        return key + varint(len(payload)) + payload
    if wire_type == 3:  # a group: payload are its fields
        return key + payload + varint(number << 3 | 4)
    return key + payload  # 1, 5 (fixed), 4 (a stray end-group)


def ld(number, payload):
    return field(number, 2, payload.encode() if isinstance(payload, str) else payload)


def vi(number, n):
    return field(number, 0, n)


# -- valid samples --------------------------------------------------------------------------

def _api_sample():
    prog = headrace.Program(registry=REG)
    g = prog.global_block()
    g.create_var("x", shape=[-1, 3], dtype="float32", lod_level=1)
    g.create_parameter("w", shape=[3, 3])
    g.create_var("arr", type="lod_tensor_array", dtype="int64", shape=[-1])
    g.create_var("feed", type="feed_minibatch", persistable=True)
    g.append_op("ident", {"X": "x"}, {"Out": "y"}, {"op_namescope": "/a/"})
    with prog.block_guard() as sub:
        sub.append_op("ident", {"X": "y"}, {"Out": "z"})
        with prog.block_guard() as inner:
            with prog.block_guard() as innermost:
                innermost.append_op("ident", {"X": "z"}, {"Out": "v"})
            # A sub-block nested in the op's own block (never an ancestor: that would recurse).
            inner.append_op("cond", {}, {}, {"sub_block": innermost, "ls": [2**40, -1]})
    g.append_op("cond", {}, {"Out": "y"}, {"sub_block": inner})
    return prog.serialize_to_string()


def _hand_sample():
    """A Paddle-style program with packed dims, unknown fields and Paddle 3 scalar attrs."""
    tensor = vi(1, 5) + ld(2, varint(-1 & (2**64 - 1)) + varint(8))
    x = ld(1, "x") + ld(2, vi(1, 7) + ld(3, ld(1, tensor) + vi(2, 1))) + vi(4, 1) + ld(99, "u")
    attrs = [ld(1, "col") + vi(2, 0) + vi(3, 0),
             ld(1, "s") + vi(2, 16) + ld(20, vi(1, 2) + field(4, 1, struct.pack("<d", 1.5))),
             ld(1, "sub_block") + vi(2, 8) + vi(12, 1),
             ld(1, "f") + vi(2, 1) + field(4, 5, struct.pack("<f", 0.5))]
    op = ld(1, ld(1, "X") + ld(2, "feed")) + ld(2, ld(1, "Out") + ld(2, "x")) + ld(3, "feed") + \
        b"".join(ld(4, a) for a in attrs)
    b0 = vi(1, 0) + vi(2, -1) + ld(3, ld(1, "feed") + ld(2, vi(1, 9))) + ld(3, x) + ld(4, op)
    b1 = vi(1, 1) + vi(2, 0) + ld(4, ld(3, "ident") + ld(1, ld(1, "X") + ld(2, "x"))) + \
        vi(5, 0) + ld(99, "b")
    return ld(1, b0) + ld(1, b1) + ld(4, vi(1, 3)) + vi(98, 1)


SAMPLES = [_api_sample(), _hand_sample()]


def test_samples_are_valid():
    for data in SAMPLES:
        assert check(data) is not None


@pytest.mark.parametrize("sample", range(len(SAMPLES)))
def test_every_truncation(sample):
    data = SAMPLES[sample]
    parsed = [n for n in range(len(data)) if check(data[:n]) is not None]
    assert 0 not in parsed  # no blocks: an error; cuts at field boundaries may parse


# -- hypothesis ---------------------------------------------------------------------------------

@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data):
    check(data)


@FUZZ
@given(st.sampled_from(SAMPLES), st.integers(0, 10**6), st.binary(max_size=12))
def test_truncated_and_extended(data, cut, tail):
    check(data[:cut % (len(data) + 1)] + tail)


@FUZZ
@given(st.sampled_from(SAMPLES),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=6))
def test_byte_flips(data, flips):
    data = bytearray(data)
    for pos, mask in flips:
        data[pos % len(data)] ^= mask
    check(bytes(data))


NUMBERS = st.one_of(st.integers(1, 21), st.sampled_from([99, 2**29 - 1, 1000]))
SCALARS = st.one_of(
    st.tuples(NUMBERS, st.just(0), st.one_of(st.integers(-2**63, 2**64 - 1),
                                             st.sampled_from([0, 1, -1, 7, 13, 2**31]))),
    st.tuples(NUMBERS, st.just(1), st.binary(min_size=8, max_size=8)),
    st.tuples(NUMBERS, st.just(5), st.binary(min_size=4, max_size=4)),
    st.tuples(NUMBERS, st.just(2), st.one_of(st.binary(max_size=16), st.text(max_size=8)
                                             .map(str.encode))),
    st.tuples(NUMBERS, st.just(4), st.just(b"")),
)


def _encode(fields):
    out = b""
    for number, wire, payload in fields:
        if isinstance(payload, list):  # a nested message (2) or group (3)
            payload = _encode(payload)
        out += field(number, wire, payload)
    return out


MESSAGES = st.recursive(
    st.lists(SCALARS, max_size=4),
    lambda inner: st.lists(st.one_of(SCALARS, st.tuples(NUMBERS, st.sampled_from([2, 2, 3]),
                                                        inner)), max_size=4),
    max_leaves=40)


@FUZZ
@given(MESSAGES)
def test_wrong_shape_messages(fields):
    check(_encode(fields))


# Schema-shaped programs: the reference's structure with mostly plausible values, where any
# field may get a wrong wire type, a wrong value or go missing. Drawn from a seeded
# random.Random (one hypothesis draw per program keeps thousands of cases fast; a failure
# reports its seed, which reproduces it).
_WRONG = {0: 3, 1: b"\0" * 8, 2: b"\x08\x01", 5: b"\0" * 4}


class _Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.p_wrong = self.r.choice([0.0, 0.0, 0.005, 0.02, 0.08])
        self.p_odd = self.r.choice([0.0, 0.01, 0.05])

    def pick(self, *options):
        return self.r.choice(options)

    def fields(self, triples):
        """Encode (number, wire type, payload); now and then a field goes wrong or missing."""
        out = b""
        for number, wire, payload in triples:
            if self.r.random() < self.p_wrong:
                if self.r.random() < 0.3:
                    continue
                wire = self.r.choice([w for w in _WRONG if w != wire])
                payload = _WRONG[wire]
            out += field(number, wire, payload.encode() if isinstance(payload, str) else payload)
        return out

    def name(self):
        return self.pick("x", "y", "w", "feed", "z", "tmp") if self.r.random() > self.p_odd \
            else self.pick("", "\u00e9", "a" * 70)

    def small(self, good):
        return good if self.r.random() > self.p_odd else self.r.randint(-3, 40)

    def var(self):
        kind = self.small(self.pick(7, 7, 7, 13, 9, 10, 8, 11))
        dims = [self.small(self.pick(-1, 1, 2, 3, 0)) for _ in range(self.r.randint(0, 3))]
        tensor = self.fields([(1, 0, self.small(self.pick(0, 2, 3, 5, 6)))] +
                             [(2, 0, d) for d in dims])
        sub = self.fields([(1, 2, tensor), (2, 0, self.small(self.pick(0, 0, 1)))])
        where = {8: (2, tensor), 13: (4, sub)}.get(kind, (3, sub))
        vtype = self.fields([(1, 0, kind), (self.small(where[0]), 2, where[1])])
        flags = [(f, 0, self.pick(0, 1)) for f in range(3, 8) if self.r.random() < 0.3]
        name = self.name() + str(self.r.randint(0, 50))  # a repeated name now and then
        return self.fields([(1, 2, name), (2, 2, vtype)] + flags)

    def attr(self, n_blocks, i):
        kind = self.small(self.pick(0, 1, 2, 3, 6, 8, 8, 9, 10, 11, 15, 16))
        number = {0: 3, 1: 4, 2: 5, 3: 6, 6: 10, 8: 12, 9: 13, 10: 14, 11: 15, 15: 19}.get(
            kind, self.r.randint(3, 21))
        wire = {1: 5, 4: 5, 7: 5, 5: 2, 8: 2, 16: 1, 17: 2, 18: 2, 19: 1}.get(number, 0)
        # Mostly a later block (a sub-block; the block's own or an earlier one makes blocks
        # own each other in a cycle, which parsing refuses), now and then any.
        later = i + 1 < n_blocks and self.r.random() < 0.8
        value = {0: self.small(self.r.randint(i + 1 if later else 0, n_blocks - 1)),
                 1: b"\0" * 8, 2: "v", 5: b"\0\0\x80?"}[wire]
        return self.fields([(1, 2, self.pick("sub_block", "is_test", "ls", "a", "op_role")),
                            (2, 0, kind), (number, wire, value)] *
                           (2 if self.r.random() < 0.05 else 1))

    def op(self, n_blocks, i):
        slots = [(self.pick(1, 2), 2, self.fields(
            [(1, 2, self.pick("X", "Out", "X", "Out", ""))] +
            [(2, 2, self.name()) for _ in range(self.r.randint(0, 2))]))
            for _ in range(self.r.randint(0, 3))]
        attrs = [(4, 2, self.attr(n_blocks, i)) for _ in range(self.r.randint(0, 3))]
        type_ = self.pick("ident", "cond", "mul", "feed") if self.r.random() < 0.95 else ""
        return self.fields([(3, 2, type_)]
                           + slots + attrs + [(5, 0, 1)] * self.pick(0, 0, 1))

    def block(self, i, n_blocks):
        parts = [(1, 0, self.small(i)), (2, 0, self.small(self.r.randint(0, i - 1) if i else -1))]
        parts += [(3, 2, self.var()) for _ in range(self.r.randint(0, 4))]
        parts += [(4, 2, self.op(n_blocks, i)) for _ in range(self.r.randint(0, 4))]
        parts += [(5, 0, self.small(self.r.randint(-1, i)))] * self.pick(0, 0, 1)
        return self.fields(parts + [(99, 2, "future")] * self.pick(0, 0, 1))

    def program(self):
        n = self.r.randint(1, 4) if self.r.random() < 0.97 else 0
        extra = [(4, 2, self.fields([(1, 0, self.r.randint(0, 9))])), (98, 0, 5),
                 (5, 2, ld(1, ld(1, "feed") + ld(2, vi(1, 1))))]
        blocks = [(1, 2, self.block(i, n)) for i in range(n)]
        self.r.shuffle(extra)
        return self.fields(blocks + extra[:self.r.randint(0, 3)])


def program_like(seed):
    return _Gen(seed).program()


@pytest.mark.parametrize("what, at_least", [
    ("parses", 0.25), ("rejected", 0.25), ("nested blocks with ops", 0.03),
    ("a BLOCK attribute", 0.1)])
def test_schema_shaped_programs_reach_loading(what, at_least):
    """The generator gets past protobuf and validation into loading, not only into errors."""
    def outcome(prog):
        if what in ("parses", "rejected"):
            return (prog is not None) == (what == "parses")
        if prog is None:
            return False
        if what == "nested blocks with ops":
            return prog.num_blocks > 1 and all(b.ops and b.vars for b in prog.blocks)
        return any(op.sub_blocks() for b in prog.blocks for op in b.ops)
    hits = sum(outcome(check(program_like(seed))) for seed in range(400))
    assert hits >= at_least * 400


@FUZZ
@given(st.integers(0, 2**64 - 1))
def test_schema_shaped_programs(seed):
    event("parsed" if check(program_like(seed)) is not None else "rejected")


# -- deep nesting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [1, 10, 64, 200, 5000, 100000])
def test_deeply_nested_groups(depth):
    open_, close = varint(99 << 3 | 3), varint(99 << 3 | 4)
    check(ld(1, vi(1, 0) + vi(2, -1)) + open_ * depth + close * depth)
    check(open_ * depth)  # never closed


@pytest.mark.parametrize("depth", [1, 50, 1000])
def test_deeply_nested_messages(depth):
    data = b""
    for _ in range(depth):  # blocks inside blocks inside ... (the wrong type for field 1)
        data = ld(1, data + vi(1, 0))
    check(data)
