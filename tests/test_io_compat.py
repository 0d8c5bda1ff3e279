"""Compatibility of headrace.io with PaddlePaddle's files, checked against the reference wire
numbers (reference/ir-wire-format.md) only.

The encoder and decoder here are independent of headrace: tensor streams are built with
struct.pack and TensorDesc/ProgramDesc messages are encoded varint by varint, the way Paddle
writes them (proto2: repeated scalars unpacked; bookkeeping attributes on every op). Files
in Paddle's layouts load and run; files headrace writes decode with the test's own decoder.
"""
import os
import struct

import numpy as np
import pytest

import headrace as hr
import headrace.io as hio

# -- protobuf wire encoding, by hand -----------------------------------------------------------


def varint(n):
    n &= (1 << 64) - 1  # negative int32/int64: ten bytes of two's complement
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n >> 7 else 0))
        n >>= 7
        if not n:
            return bytes(out)


def vint(field, n):
    return varint(field << 3) + varint(n)


def ld(field, payload):
    payload = payload.encode() if isinstance(payload, str) else payload
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def f32(field, x):
    return varint(field << 3 | 5) + struct.pack("<f", x)


# VarType.Type values of the reference.
BOOL, INT16, INT32, INT64, FP16, FP32, FP64 = 0, 1, 2, 3, 4, 5, 6
LOD_TENSOR, FEED_MINIBATCH, FETCH_LIST, UINT8, INT8 = 7, 9, 10, 20, 21
NP_TO_ENUM = {"bool": BOOL, "int16": INT16, "int32": INT32, "int64": INT64, "float16": FP16,
              "float32": FP32, "float64": FP64, "uint8": UINT8, "int8": INT8}
ENUM_TO_NP = {v: k for k, v in NP_TO_ENUM.items()}
# AttrType values.
A_INT, A_FLOAT, A_STRING, A_INTS, A_FLOATS, A_STRINGS, A_BOOLEAN = range(7)


def tensor_desc(dtype, dims, packed=False):
    if packed:
        return vint(1, dtype) + ld(2, b"".join(varint(d) for d in dims))
    return vint(1, dtype) + b"".join(vint(2, d) for d in dims)


def paddle_stream(array, lod=(), packed=False):
    """One saved tensor as Paddle writes it (struct.pack + the hand TensorDesc)."""
    array = np.asarray(array)
    out = struct.pack("<I", 0) + struct.pack("<Q", len(lod))
    for level in lod:
        out += struct.pack("<Q", 8 * len(level)) + struct.pack(f"<{len(level)}Q", *level)
    desc = tensor_desc(NP_TO_ENUM[array.dtype.name], array.shape, packed)
    out += struct.pack("<I", 0) + struct.pack("<i", len(desc)) + desc
    return out + np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()


def var(name, kind, dtype=None, dims=None, **flags):
    vt = vint(1, kind)
    if dtype is not None:
        vt += ld(3, ld(1, tensor_desc(dtype, dims)) + vint(2, 0))
    numbers = {"persistable": 3, "need_check_feed": 4, "is_parameter": 5, "stop_gradient": 6}
    return ld(1, name) + ld(2, vt) + b"".join(vint(numbers[k], v) for k, v in flags.items())


def attr(name, type_, value):
    return ld(1, name) + vint(2, type_) + value


BOOKKEEPING = [  # what Paddle puts on every op; headrace's op definitions declare none of it
    attr("op_role", A_INT, vint(3, 0)),
    attr("op_role_var", A_STRINGS, b""),
    attr("op_namescope", A_STRING, ld(5, "/")),
    attr("op_callstack", A_STRINGS, ld(8, 'File "train.py", line 12, in <module>') +
         ld(8, "    out = fluid.layers.fc(x, 3)")),
    attr("op_device", A_STRING, ld(5, "")),
    attr("with_quant_attr", A_BOOLEAN, vint(10, 0)),
]


def op(type_, inputs, outputs, attrs=()):
    def slots(field, d):
        return b"".join(ld(field, ld(1, k) + b"".join(ld(2, a) for a in v))
                        for k, v in d.items())
    return slots(1, inputs) + slots(2, outputs) + ld(3, type_) + \
        b"".join(ld(4, a) for a in list(attrs) + BOOKKEEPING)


def program(vars_, ops):
    block = vint(1, 0) + vint(2, -1) + b"".join(ld(3, v) for v in vars_) + \
        b"".join(ld(4, o) for o in ops) + vint(5, -1)
    version_map = ld(1, ld(1, "scale") + ld(2, vint(1, 1)))
    return ld(1, block) + ld(4, vint(1, 0)) + ld(5, version_map)


def fc_model():
    """Paddle's fc + relu + the save_infer_model/scale op, feed and fetch ops included."""
    out = "save_infer_model/scale_0.tmp_0"
    vars_ = [
        var("feed", FEED_MINIBATCH, persistable=1),
        var("fetch", FETCH_LIST, persistable=1),
        var("x", LOD_TENSOR, FP32, [-1, 4], need_check_feed=1, stop_gradient=1),
        var("fc_0.w_0", LOD_TENSOR, FP32, [4, 3], persistable=1, is_parameter=1,
            stop_gradient=0),
        var("fc_0.b_0", LOD_TENSOR, FP32, [3], persistable=1),  # an older writer: no flag
        var("fc_0.tmp_0", LOD_TENSOR, FP32, [-1, 3]),
        var("fc_0.tmp_1", LOD_TENSOR, FP32, [-1, 3]),
        var("relu_0.tmp_0", LOD_TENSOR, FP32, [-1, 3]),
        var(out, LOD_TENSOR, FP32, [-1, 3]),
    ]
    ops = [
        op("feed", {"X": ["feed"]}, {"Out": ["x"]}, [attr("col", A_INT, vint(3, 0))]),
        op("mul", {"X": ["x"], "Y": ["fc_0.w_0"]}, {"Out": ["fc_0.tmp_0"]},
           [attr("x_num_col_dims", A_INT, vint(3, 1)), attr("y_num_col_dims", A_INT, vint(3, 1)),
            attr("use_mkldnn", A_BOOLEAN, vint(10, 0)), attr("scale_x", A_FLOAT, f32(4, 1.0)),
            attr("scale_y", A_FLOATS, f32(7, 1.0)), attr("force_fp32_output", A_BOOLEAN,
                                                        vint(10, 0))]),
        op("elementwise_add", {"X": ["fc_0.tmp_0"], "Y": ["fc_0.b_0"]}, {"Out": ["fc_0.tmp_1"]},
           [attr("axis", A_INT, vint(3, 1)), attr("x_data_format", A_STRING, ld(5, "")),
            attr("use_mkldnn", A_BOOLEAN, vint(10, 0))]),
        op("relu", {"X": ["fc_0.tmp_1"]}, {"Out": ["relu_0.tmp_0"]},
           [attr("use_cudnn", A_BOOLEAN, vint(10, 0)), attr("is_test", A_BOOLEAN, vint(10, 1))]),
        op("scale", {"X": ["relu_0.tmp_0"]}, {"Out": [out]},
           [attr("scale", A_FLOAT, f32(4, 2.0)), attr("bias", A_FLOAT, f32(4, 0.25)),
            attr("bias_after_scale", A_BOOLEAN, vint(10, 1))]),
        op("fetch", {"X": [out]}, {"Out": ["fetch"]}, [attr("col", A_INT, vint(3, 0))]),
    ]
    return program(vars_, ops), out


W = np.random.default_rng(3).standard_normal((4, 3)).astype("float32")
B = np.array([0.5, -1.0, 2.0], dtype="float32")
X = np.random.default_rng(4).standard_normal((5, 4)).astype("float32")
EXPECTED = np.maximum(X @ W + B, 0) * 2.0 + 0.25


def check_runs(program, feeds, fetches, scope, out_name):
    assert feeds == ["x"] and [f.name for f in fetches] == [out_name]
    np.testing.assert_array_equal(scope.find("fc_0.w_0").data, W)
    np.testing.assert_array_equal(scope.find("fc_0.b_0").data, B)
    (got,) = hr.Executor().run(program, feed={"x": X}, fetch_list=fetches, scope=scope)
    np.testing.assert_allclose(got, EXPECTED, rtol=1e-5, atol=1e-6)


# Sorted as strings: fc_0.b_0 < fc_0.w_0.
COMBINED = paddle_stream(B) + paddle_stream(W)


def test_fluid_layout_model_and_combined_params(tmp_path):
    model, out = fc_model()
    (tmp_path / "__model__").write_bytes(model)
    (tmp_path / "__params__").write_bytes(COMBINED)
    scope = hr.Scope()
    # optimize=False: the program as the file has it (the passes would fuse mul into fc).
    prog, feeds, fetches = hio.load_inference_model(str(tmp_path), hr.Executor(),
                                                    params_filename="__params__", scope=scope,
                                                    optimize=False)
    check_runs(prog, feeds, fetches, scope, out)
    mul = prog.global_block().ops[1]
    assert mul.attr("force_fp32_output") is False and mul.source.startswith('File "train.py"')


def test_fluid_layout_one_file_per_parameter(tmp_path):
    model, out = fc_model()
    (tmp_path / "__model__").write_bytes(model)
    (tmp_path / "fc_0.w_0").write_bytes(paddle_stream(W))
    (tmp_path / "fc_0.b_0").write_bytes(paddle_stream(B))
    scope = hr.Scope()
    check_runs(*hio.load_inference_model(str(tmp_path), hr.Executor(), scope=scope), scope, out)


@pytest.mark.parametrize("how", ["prefix", "filenames", "model_filename_only"])
def test_paddle2_layout_pdmodel_pdiparams(tmp_path, how):
    model, out = fc_model()
    (tmp_path / "inference.pdmodel").write_bytes(model)
    (tmp_path / "inference.pdiparams").write_bytes(COMBINED)
    scope, exe = hr.Scope(), hr.Executor()
    if how == "prefix":
        loaded = hio.load_inference_model(str(tmp_path / "inference"), exe, scope=scope)
    elif how == "filenames":
        loaded = hio.load_inference_model(str(tmp_path), exe, "inference.pdmodel",
                                          "inference.pdiparams", scope=scope)
    else:
        loaded = hio.load_inference_model(str(tmp_path), exe, "inference.pdmodel", scope=scope)
    check_runs(*loaded, scope, out)


def test_paddle_feed_and_fetch_ops_are_ordered_by_col(tmp_path):
    vars_ = [var("feed", FEED_MINIBATCH, persistable=1), var("fetch", FETCH_LIST, persistable=1)]
    vars_ += [var(n, LOD_TENSOR, FP64, [-1, 2]) for n in ("a", "b", "s", "r")]
    col = lambda i: [attr("col", A_INT, vint(3, i))]  # noqa: E731
    ops = [  # Paddle prepends feed ops one by one: the last feed comes first
        op("feed", {"X": ["feed"]}, {"Out": ["b"]}, col(1)),
        op("feed", {"X": ["feed"]}, {"Out": ["a"]}, col(0)),
        op("elementwise_add", {"X": ["a"], "Y": ["b"]}, {"Out": ["s"]},
           [attr("axis", A_INT, vint(3, -1))]),
        op("relu", {"X": ["s"]}, {"Out": ["r"]}),
        op("fetch", {"X": ["s"]}, {"Out": ["fetch"]}, col(1)),
        op("fetch", {"X": ["r"]}, {"Out": ["fetch"]}, col(0)),
    ]
    (tmp_path / "__model__").write_bytes(program(vars_, ops))
    prog, feeds, fetches = hio.load_inference_model(str(tmp_path), hr.Executor(),
                                                    scope=hr.Scope())
    assert feeds == ["a", "b"] and [f.name for f in fetches] == ["r", "s"]
    a, b = np.array([[1.0, -5.0]]), np.array([[2.0, 1.0]])
    r, s = hr.Executor().run(prog, feed={"a": a, "b": b}, scope=hr.Scope())
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(r, np.maximum(a + b, 0))


SAMPLES = [
    (np.array([[1, -2], [3, 2**50]], dtype="int64"), [[0, 1, 2]]),
    (np.array([True, False, True]), []),
    (np.array([[0.25, -1e300]]), []),
    (np.arange(-4, 4, dtype="int32").reshape(2, 2, 2), [[0, 2], [0, 1, 2]]),
    (np.array([-1.5, 65504], dtype="float16"), []),
    (np.array([0, 255], dtype="uint8"), []),
    (np.array([-128, 5], dtype="int8"), []),
    (np.array([-300, 300], dtype="int16"), []),
    (np.array(7.0, dtype="float32"), []),
    (np.zeros((2, 0), dtype="float64"), []),
]


@pytest.mark.parametrize("array, lod", SAMPLES, ids=lambda p: getattr(p, "dtype", None) and
                         f"{p.dtype}{list(p.shape)}")
def test_streams_are_byte_identical_to_paddles(array, lod):
    assert hio.encode_tensor(array, lod) == paddle_stream(array, lod)
    for packed in (False, True):  # other writers pack repeated scalars: read both
        got, got_lod = hio.decode_tensor(paddle_stream(array, lod, packed))
        assert got.dtype == array.dtype and got.shape == array.shape and got_lod == lod
        np.testing.assert_array_equal(got, array)


def test_load_vars_of_hand_written_lod_and_int_tensors(tmp_path):
    prog = hr.Program()
    blk = prog.global_block()
    for i, (a, lod) in enumerate(SAMPLES[:4]):
        blk.create_var(name=f"v{i}", shape=a.shape, dtype=a.dtype, persistable=True,
                       lod_level=len(lod))
        (tmp_path / f"v{i}").write_bytes(paddle_stream(a, lod))
    (tmp_path / "all").write_bytes(b"".join(paddle_stream(*s) for s in SAMPLES[:4]))
    for filename in (None, "all"):
        scope = hr.Scope()
        hio.load_persistables(hr.Executor(), str(tmp_path), prog, filename, scope=scope)
        for i, (a, lod) in enumerate(SAMPLES[:4]):
            t = scope.find(f"v{i}")
            assert t.data.dtype == a.dtype and t.lod == lod
            np.testing.assert_array_equal(t.data, a)


# -- decoding headrace's files with the test's own decoder -------------------------------------

def read_varint(buf, pos):
    n = shift = 0
    while True:
        b = buf[pos]
        n |= (b & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not b & 0x80:
            return n, pos


def fields(buf):
    """[(field number, value)] of a message: ints for varints, bytes for the rest."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(buf, pos)
        elif wire == 2:
            size, pos = read_varint(buf, pos)
            value, pos = bytes(buf[pos:pos + size]), pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = bytes(buf[pos:pos + size]), pos + size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.append((number, value))
    assert pos == len(buf)
    return out


def get(msg, number):
    return [v for n, v in fields(msg) if n == number]


def decode_stream(buf, pos=0):
    """(dtype enum, dims, lod, array, next pos) of the stream at ``pos``."""
    (version,) = struct.unpack_from("<I", buf, pos)
    (levels,) = struct.unpack_from("<Q", buf, pos + 4)
    assert version == 0
    pos += 12
    lod = []
    for _ in range(levels):
        (nbytes,) = struct.unpack_from("<Q", buf, pos)
        lod.append(list(struct.unpack_from(f"<{nbytes // 8}Q", buf, pos + 8)))
        pos += 8 + nbytes
    version, size = struct.unpack_from("<Ii", buf, pos)
    assert version == 0
    desc = buf[pos + 8:pos + 8 + size]
    pos += 8 + size
    (dtype,) = get(desc, 1)
    dims = [d - (1 << 64) if d >= 1 << 63 else d for d in get(desc, 2)]
    array = np.frombuffer(buf, ENUM_TO_NP[dtype], int(np.prod(dims)), pos).reshape(dims)
    return dtype, dims, lod, array, pos + array.nbytes


def test_saved_parameter_files_follow_the_stream_format(tmp_path):
    prog = hr.Program()
    blk = prog.global_block()
    scope = hr.Scope()
    for i, (a, lod) in enumerate(SAMPLES):
        blk.create_var(name=f"v{i}", shape=a.shape, dtype=a.dtype, persistable=True)
        scope.set(f"v{i}", hr.Tensor(a, lod))
    hio.save_persistables(None, str(tmp_path / "each"), prog, scope=scope)
    hio.save_persistables(None, str(tmp_path), prog, filename="all", scope=scope)
    combined, pos = (tmp_path / "all").read_bytes(), 0
    for i in sorted(range(len(SAMPLES)), key=lambda i: f"v{i}"):
        a, lod = SAMPLES[i]
        one = (tmp_path / "each" / f"v{i}").read_bytes()
        dtype, dims, got_lod, got, end = decode_stream(one)
        assert end == len(one)
        assert (dtype, dims, got_lod) == (NP_TO_ENUM[a.dtype.name], list(a.shape), lod)
        np.testing.assert_array_equal(got, a)
        dtype2, dims2, lod2, got2, pos = decode_stream(combined, pos)
        assert (dtype2, dims2, lod2) == (dtype, dims, lod)
        np.testing.assert_array_equal(got2, a)
    assert pos == len(combined)


def test_saved_inference_model_decodes_with_the_reference_numbers(tmp_path):
    model, out = fc_model()
    (tmp_path / "src.pdmodel").write_bytes(model)
    (tmp_path / "src.pdiparams").write_bytes(COMBINED)
    scope, exe = hr.Scope(), hr.Executor()
    prog, _, fetches = hio.load_inference_model(str(tmp_path / "src"), exe, scope=scope,
                                                optimize=False)
    # Save again, targeting relu's output: the scale op goes, the parameters stay.
    hio.save_inference_model(str(tmp_path / "out"), ["x"], ["relu_0.tmp_0"], exe, prog,
                             "m.pdmodel", scope=scope)
    assert sorted(n for n in os.listdir(tmp_path / "out") if not n.startswith(".")) == \
        ["m.pdiparams", "m.pdmodel"]
    blocks = get((tmp_path / "out" / "m.pdmodel").read_bytes(), 1)
    assert len(blocks) == 1
    block = blocks[0]
    assert get(block, 1) == [0] and get(block, 2) == [(1 << 64) - 1]  # idx 0, parent -1
    vars_ = {get(v, 1)[0].decode(): v for v in get(block, 3)}
    assert set(vars_) == {"feed", "fetch", "x", "fc_0.w_0", "fc_0.b_0", "fc_0.tmp_0",
                          "fc_0.tmp_1", "relu_0.tmp_0"}
    assert get(get(vars_["feed"], 2)[0], 1) == [FEED_MINIBATCH] and get(vars_["feed"], 3) == [1]
    assert get(get(vars_["fetch"], 2)[0], 1) == [FETCH_LIST]
    assert get(vars_["fc_0.w_0"], 5) == [1] and get(vars_["fc_0.w_0"], 3) == [1]
    ops = get(block, 4)
    assert [get(o, 3)[0].decode() for o in ops] == ["feed", "mul", "elementwise_add", "relu",
                                                    "fetch"]
    feed, fetch = ops[0], ops[-1]

    def slot(o, field):
        (s,) = get(o, field)
        return get(s, 1)[0].decode(), [a.decode() for a in get(s, 2)]

    def col(o):
        (a,) = [a for a in get(o, 4) if get(a, 1) == [b"col"]]
        return get(a, 2)[0], get(a, 3)[0]
    assert slot(feed, 1) == ("X", ["feed"]) and slot(feed, 2) == ("Out", ["x"])
    assert slot(fetch, 1) == ("X", ["relu_0.tmp_0"]) and slot(fetch, 2) == ("Out", ["fetch"])
    assert col(feed) == (A_INT, 0) and col(fetch) == (A_INT, 0)
    assert get(ops[3], 5) == [1]  # relu produces the target: is_target
    data, pos = (tmp_path / "out" / "m.pdiparams").read_bytes(), 0
    for name, want in (("fc_0.b_0", B), ("fc_0.w_0", W)):
        dtype, dims, lod, got, pos = decode_stream(data, pos)
        assert (dtype, dims, lod) == (FP32, list(want.shape), []), name
        np.testing.assert_array_equal(got, want)
    assert pos == len(data)
