"""headrace.io: tensor streams, save/load of variables, inference models, corrupt files and
atomic writes. Programs use ops with CPU kernels (mul, elementwise_add, relu, scale); values are
put into Scopes by hand."""
import os
import struct

import numpy as np
import pytest

import headrace as hr
import headrace.io as hio
from headrace.errors import HeadraceError
from headrace.io import ModelFileError
from headrace.io import atomic as atomic_mod
from headrace.io import persistables as persist_mod
from headrace.proto import framework_pb2 as pb

rng = np.random.default_rng(7)


def mlp(extra_branch=False):
    """x[-1, 3] -> mul(w) -> + b -> relu -> scale(2) ; returns (program, {name: var})."""
    prog = hr.Program()
    blk = prog.global_block()
    x = blk.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    w = blk.create_parameter("w", [3, 2])
    b = blk.create_parameter("b", [2])
    blk.append_op("mul", {"X": x, "Y": w}, {"Out": "h"})
    blk.append_op("elementwise_add", {"X": "h", "Y": b}, {"Out": "h2"})
    blk.append_op("relu", {"X": "h2"}, {"Out": "y"})
    blk.append_op("scale", {"X": "y"}, {"Out": "z"}, {"scale": 2.0, "bias": 0.5})
    if extra_branch:  # a branch the targets do not need, with a parameter of its own
        blk.create_parameter("unused_w", [3, 5])
        blk.append_op("mul", {"X": x, "Y": "unused_w"}, {"Out": "other"})
    return prog, blk.vars


def mlp_scope(extra_branch=False):
    scope = hr.Scope()
    values = {"w": rng.standard_normal((3, 2)).astype("float32"),
              "b": rng.standard_normal(2).astype("float32")}
    if extra_branch:
        values["unused_w"] = rng.standard_normal((3, 5)).astype("float32")
    for k, v in values.items():
        scope.set(k, hr.Tensor(v))
    return scope, values


def expected_mlp(x, values):
    return np.maximum(x @ values["w"] + values["b"], 0) * 2 + 0.5


def no_temp_files(directory):
    return not [n for root, _, files in os.walk(directory) for n in files if n.endswith(".tmp")]


# -- the tensor stream -------------------------------------------------------------------------

ARRAYS = {
    "float32": rng.standard_normal((2, 3)).astype("float32"),
    "float64": rng.standard_normal((4,)),
    "int64": np.array([[-(2**62), 5], [7, 2**62]], dtype="int64"),
    "int32": np.arange(-3, 3, dtype="int32").reshape(3, 2),
    "int16": np.array([-7, 8], dtype="int16"),
    "int8": np.array([-128, 127], dtype="int8"),
    "uint8": np.array([0, 255], dtype="uint8"),
    "float16": np.array([1.5, -2.25], dtype="float16"),
    "bool": np.array([[True, False, True]]),
    "complex64": np.array([1 + 2j, -3j], dtype="complex64"),
    "0-d": np.array(3.25, dtype="float32"),
    "empty": np.zeros((0, 3), dtype="float32"),
    "3-d": rng.standard_normal((2, 1, 3)).astype("float64"),
}


@pytest.mark.parametrize("name", ARRAYS)
def test_stream_round_trip(name):
    a = ARRAYS[name]
    b, lod = hio.decode_tensor(hio.encode_tensor(a))
    assert b.dtype == a.dtype and b.shape == a.shape and lod == []
    np.testing.assert_array_equal(b, a)
    assert b.flags.writeable  # a copy, not a view of the file's bytes


def test_stream_round_trip_with_lod():
    a = np.arange(10, dtype="int64").reshape(5, 2)
    lod = [[0, 1, 3], [0, 2, 3, 5]]
    b, got = hio.decode_tensor(hio.encode_tensor(a, lod))
    assert got == lod
    np.testing.assert_array_equal(a, b)


def test_stream_is_little_endian_whatever_the_input_order():
    a = np.arange(6, dtype=">f4").reshape(2, 3)
    assert hio.encode_tensor(a) == hio.encode_tensor(a.astype("<f4"))
    assert hio.encode_tensor(a[:, ::2]) == hio.encode_tensor(np.ascontiguousarray(a[:, ::2]))


def test_stream_rejects_unsavable_dtype_and_bad_lod():
    with pytest.raises(HeadraceError, match="cannot save"):
        hio.encode_tensor(np.array(["a"], dtype=object))
    with pytest.raises(HeadraceError, match="LoD"):
        hio.encode_tensor(np.zeros((3, 1), "float32"), [[0, 1, 2]])


# -- save_vars / load_vars ---------------------------------------------------------------------

VALUES = {
    "p_f32": rng.standard_normal((3, 2)).astype("float32"),
    "p_f64": rng.standard_normal((4,)),
    "s_i64": np.array([1, -2, 2**40], dtype="int64"),
    "s_bool": np.array([True, False]),
    "s_0d": np.array(0.125, dtype="float32"),
    "s_empty": np.zeros((0, 4), dtype="float32"),
    "s_lod": np.arange(12, dtype="float32").reshape(4, 3),
}
LOD = {"s_lod": [[0, 1, 4]]}


def state_program():
    """Parameters and other persistables of many dtypes/shapes, plus a temporary."""
    prog = hr.Program()
    blk = prog.global_block()
    for name, v in VALUES.items():
        if name.startswith("p_"):
            blk.create_parameter(name, v.shape, dtype=v.dtype)
        else:
            blk.create_var(name=name, shape=v.shape, dtype=v.dtype, persistable=True,
                           lod_level=len(LOD.get(name, [])))
    blk.create_var(name="temp", shape=[2], dtype="float32")
    scope = hr.Scope()
    for name, v in VALUES.items():
        scope.set(name, hr.Tensor(v.copy(), LOD.get(name)))
    return prog, scope


def assert_loaded(scope, names):
    for name in names:
        t = scope.find(name)
        assert isinstance(t, hr.Tensor), name
        assert t.data.dtype == VALUES[name].dtype and t.data.shape == VALUES[name].shape
        np.testing.assert_array_equal(t.data, VALUES[name])
        assert t.lod == LOD.get(name, [])


@pytest.mark.parametrize("filename", [None, "__params__"])
def test_persistables_round_trip(tmp_path, filename):
    prog, scope = state_program()
    exe = hr.Executor()
    saved = hio.save_persistables(exe, str(tmp_path), prog, filename=filename, scope=scope)
    assert saved == sorted(VALUES)
    files = sorted(os.listdir(tmp_path))
    assert files == ([filename] if filename else sorted(VALUES))
    fresh = hr.Scope()
    assert hio.load_persistables(exe, str(tmp_path), prog, filename=filename,
                                 scope=fresh) == sorted(VALUES)
    assert_loaded(fresh, VALUES)
    assert fresh.find("temp") is None


@pytest.mark.parametrize("filename", [None, "params.bin"])
def test_params_only_and_global_scope_default(tmp_path, filename):
    prog, scope = state_program()
    exe = hr.Executor()
    with hr.scope_guard(scope):
        assert hio.save_params(exe, str(tmp_path), prog, filename) == ["p_f32", "p_f64"]
    fresh = hr.Scope()
    with hr.scope_guard(fresh):
        hio.load_params(exe, str(tmp_path), prog, filename)
    assert_loaded(fresh, ["p_f32", "p_f64"])
    assert fresh.find("s_i64") is None


def test_save_vars_by_list_and_predicate(tmp_path):
    prog, scope = state_program()
    exe = hr.Executor()
    blk = prog.global_block()
    hio.save_vars(exe, str(tmp_path), prog, vars=[blk.var("s_bool"), "s_i64"], scope=scope)
    assert sorted(os.listdir(tmp_path)) == ["s_bool", "s_i64"]
    hio.save_vars(exe, str(tmp_path / "p"), prog, predicate=lambda v: v.name.endswith("0d"),
                  scope=scope)
    assert os.listdir(tmp_path / "p") == ["s_0d"]
    fresh = hr.Scope()
    hio.load_vars(exe, str(tmp_path), prog, vars=["s_i64", "s_bool"], scope=fresh)
    assert_loaded(fresh, ["s_i64", "s_bool"])


def test_combined_file_is_streams_in_sorted_name_order(tmp_path):
    prog = hr.Program()
    blk = prog.global_block()
    names = ["b", "a10", "a2", "B", "_z"]
    scope = hr.Scope()
    for i, n in enumerate(names):
        blk.create_var(name=n, shape=[1], dtype="float32", persistable=True)
        scope.set(n, hr.Tensor(np.array([i], "float32")))
    hio.save_persistables(None, str(tmp_path), prog, filename="all", scope=scope)
    data = (tmp_path / "all").read_bytes()
    expected = b"".join(hio.encode_tensor(np.array([names.index(n)], "float32"))
                        for n in sorted(names))
    assert data == expected


def test_save_without_value_fails_before_writing(tmp_path):
    prog, scope = state_program()
    scope.erase("s_i64")
    with pytest.raises(HeadraceError, match="'s_i64' has no value"):
        hio.save_persistables(hr.Executor(), str(tmp_path), prog, scope=scope)
    assert os.listdir(tmp_path) == []


def test_load_rejects_values_that_do_not_match_the_program(tmp_path):
    prog, scope = state_program()
    exe = hr.Executor()
    hio.save_persistables(exe, str(tmp_path), prog, scope=scope)
    (tmp_path / "p_f32").write_bytes(hio.encode_tensor(np.zeros((3, 2), "float64")))
    fresh = hr.Scope()
    with pytest.raises(ModelFileError, match="does not match its declaration") as e:
        hio.load_persistables(exe, str(tmp_path), prog, scope=fresh)
    assert "p_f32" in str(e.value) and "float32[3, 2]" in str(e.value)
    assert fresh.names() == []  # nothing was loaded: every file is checked first


def test_combined_file_with_more_or_fewer_tensors(tmp_path):
    prog, scope = state_program()
    exe = hr.Executor()
    hio.save_persistables(exe, str(tmp_path), prog, filename="c", scope=scope)
    data = (tmp_path / "c").read_bytes()
    (tmp_path / "c").write_bytes(data + hio.encode_tensor(np.zeros(1, "float32")))
    with pytest.raises(ModelFileError, match="unexpected bytes") as e:
        hio.load_persistables(exe, str(tmp_path), prog, filename="c", scope=hr.Scope())
    assert str(tmp_path / "c") in str(e.value)
    prog.global_block().create_var(name="zzz", shape=[1], dtype="float32", persistable=True)
    (tmp_path / "c").write_bytes(data)
    with pytest.raises(ModelFileError, match="zzz"):
        hio.load_persistables(exe, str(tmp_path), prog, filename="c", scope=hr.Scope())


def test_missing_file_is_a_clear_error(tmp_path):
    prog, _ = state_program()
    with pytest.raises(ModelFileError, match="no such file") as e:
        hio.load_persistables(hr.Executor(), str(tmp_path), prog, scope=hr.Scope())
    assert str(tmp_path / "p_f32") in str(e.value)
    with pytest.raises(ModelFileError, match="no such file"):
        hio.load_persistables(hr.Executor(), str(tmp_path), prog, filename="nope",
                              scope=hr.Scope())


def test_variable_names_cannot_escape_the_directory(tmp_path):
    prog = hr.Program()
    prog.global_block().create_var(name="../evil", shape=[1], dtype="float32", persistable=True)
    scope = hr.Scope()
    scope.set("../evil", hr.Tensor(np.zeros(1, "float32")))
    with pytest.raises(HeadraceError, match="cannot be used as a file name"):
        hio.save_persistables(None, str(tmp_path / "d"), prog, scope=scope)
    hio.save_persistables(None, str(tmp_path / "d"), prog, filename="all", scope=scope)
    assert not (tmp_path / "evil").exists()


# -- inference models --------------------------------------------------------------------------

@pytest.mark.parametrize("model, params, files", [
    (None, None, ["__model__", "b", "w"]),
    (None, "__params__", ["__model__", "__params__"]),
    ("inference.pdmodel", None, ["inference.pdiparams", "inference.pdmodel"]),
    ("m.pdmodel", "weights", ["m.pdmodel", "weights"]),
])
def test_inference_model_round_trip(tmp_path, model, params, files):
    prog, v = mlp()
    scope, values = mlp_scope()
    exe = hr.Executor()
    assert hio.save_inference_model(str(tmp_path), ["x"], [v["z"]], exe, prog, model, params,
                                    scope=scope) == ["z"]
    assert sorted(os.listdir(tmp_path)) == files
    fresh = hr.Scope()
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, model, params,
                                                       scope=fresh)
    assert feeds == ["x"] and [f.name for f in fetches] == ["z"]
    assert sorted(fresh.names()) == ["b", "w"]
    x = rng.standard_normal((5, 3)).astype("float32")
    (out,) = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=fresh)
    np.testing.assert_allclose(out, expected_mlp(x, values), rtol=1e-5)
    (again,) = exe.run(program, feed={"x": x}, scope=fresh)  # fetch ops give the targets
    np.testing.assert_array_equal(again, out)


def test_load_inference_model_from_a_path_prefix(tmp_path):
    prog, v = mlp()
    scope, values = mlp_scope()
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], ["z"], exe, prog, "net.pdmodel", scope=scope)
    program, feeds, fetches = hio.load_inference_model(str(tmp_path / "net"), exe,
                                                       scope=hr.Scope())
    assert feeds == ["x"] and fetches[0].name == "z"


def test_inference_program_is_pruned_and_marked(tmp_path):
    prog, v = mlp(extra_branch=True)
    blk = prog.global_block()
    with prog.op_role_guard(1):  # a backward op: clone(for_test=True) drops it
        blk.append_op("scale", {"X": "z"}, {"Out": "z_grad_like"})
    scope, values = mlp_scope(extra_branch=True)
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], [v["y"]], exe, prog, scope=scope)
    assert sorted(os.listdir(tmp_path)) == ["__model__", "b", "w"]  # no unused_w
    desc = pb.ProgramDesc()
    desc.ParseFromString((tmp_path / "__model__").read_bytes())
    ops = desc.blocks[0].ops
    assert [o.type for o in ops] == ["feed", "mul", "elementwise_add", "relu", "fetch"]
    assert [o.is_target for o in ops] == [False, False, False, True, False]
    names = {d.name: d for d in desc.blocks[0].vars}
    assert set(names) == {"feed", "fetch", "x", "w", "b", "h", "h2", "y"}
    assert names["feed"].type.type == pb.VarType.FEED_MINIBATCH and names["feed"].persistable
    assert names["fetch"].type.type == pb.VarType.FETCH_LIST and names["fetch"].persistable
    assert prog.global_block().has_var("unused_w")  # the user's program is untouched
    assert len(prog.global_block().ops) == 6


def test_inference_model_of_a_loaded_model_and_multiple_targets(tmp_path):
    prog, v = mlp()
    scope, values = mlp_scope()
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path / "a"), ["x"], ["z", "h"], exe, prog, scope=scope)
    program, feeds, fetches = hio.load_inference_model(str(tmp_path / "a"), exe, scope=scope)
    assert [f.name for f in fetches] == ["z", "h"]
    # Saving a loaded model again replaces its feed/fetch ops instead of doubling them.
    hio.save_inference_model(str(tmp_path / "b"), ["x"], fetches[:1], exe, program,
                             scope=scope)
    program2, _, fetches2 = hio.load_inference_model(str(tmp_path / "b"), exe, scope=scope)
    assert [o.type for o in program2.global_block().ops].count("feed") == 1
    x = rng.standard_normal((2, 3)).astype("float32")
    (out,) = exe.run(program2, feed={"x": x}, fetch_list=fetches2, scope=scope)
    np.testing.assert_allclose(out, expected_mlp(x, values), rtol=1e-5)


def test_inference_model_errors(tmp_path):
    prog, v = mlp()
    scope, _ = mlp_scope()
    exe = hr.Executor()
    with pytest.raises(HeadraceError, match="'x' .*neither fed nor computed"):
        hio.save_inference_model(str(tmp_path), [], ["z"], exe, prog, scope=scope)
    with pytest.raises(HeadraceError, match="'nope' is not a variable"):
        hio.save_inference_model(str(tmp_path), ["nope"], ["z"], exe, prog, scope=scope)
    with pytest.raises(HeadraceError, match="needs at least one target"):
        hio.save_inference_model(str(tmp_path), ["x"], [], exe, prog, scope=scope)
    assert os.listdir(tmp_path) == []
    with pytest.raises(ModelFileError, match="no model file") as e:
        hio.load_inference_model(str(tmp_path), exe)
    assert "__model__" in str(e.value)
    (tmp_path / "__model__").write_bytes(b"\xff\xff\xff garbage")
    with pytest.raises(ModelFileError, match="not a valid program"):
        hio.load_inference_model(str(tmp_path), exe)


def test_program_only_writes_no_parameters(tmp_path):
    prog, v = mlp()
    hio.save_inference_model(str(tmp_path), ["x"], ["z"], hr.Executor(), prog,
                             program_only=True, scope=hr.Scope())
    assert os.listdir(tmp_path) == ["__model__"]


def test_feed_as_target_and_model_without_parameters(tmp_path):
    prog = hr.Program()
    blk = prog.global_block()
    blk.create_var(name="x", shape=[-1, 2], dtype="float32", need_check_feed=True)
    blk.append_op("scale", {"X": "x"}, {"Out": "y"}, {"scale": 3.0})
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], ["y", "x"], exe, prog, scope=hr.Scope())
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, scope=hr.Scope())
    x = np.ones((1, 2), "float32")
    y, x2 = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=hr.Scope())
    np.testing.assert_array_equal(y, 3 * x)
    np.testing.assert_array_equal(x2, x)


@pytest.mark.cuda
def test_save_and_load_on_a_cuda_place(tmp_path):
    place = hr.CUDAPlace(0)
    try:
        device = place.module()
    except hr.runtime.DeviceUnavailableError as e:
        pytest.skip(str(e))
    prog, v = mlp()
    scope, values = mlp_scope()
    for k, a in values.items():
        scope.set(k, hr.Tensor(device.to_device(a, place)))
    exe = hr.Executor(place)
    # Target y: scale has no CUDA kernel.
    hio.save_inference_model(str(tmp_path), ["x"], ["y"], exe, prog, params_filename="p",
                             scope=scope)
    fresh = hr.Scope()
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, params_filename="p",
                                                       scope=fresh)
    assert device.is_array(fresh.find("w").data)
    x = rng.standard_normal((2, 3)).astype("float32")
    (out,) = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=fresh)
    np.testing.assert_allclose(out, np.maximum(x @ values["w"] + values["b"], 0), rtol=1e-5)
    hio.save_params(exe, str(tmp_path / "again"), program, scope=fresh)  # device -> host
    for k, a in values.items():
        np.testing.assert_array_equal(hio.read_tensor_file(str(tmp_path / "again" / k))[0], a)


# -- corrupt and truncated files ---------------------------------------------------------------

SMALL = hio.encode_tensor(np.array([[1.0, 2.0], [3.0, 4.0]], "float32"), [[0, 1, 2]])


def _varint(n):
    n &= (1 << 64) - 1  # negative int64: ten bytes of two's complement, as protobuf writes
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n >> 7 else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _desc(dtype=5, dims=(2, 2)):
    """A TensorDesc by hand (data_type = 1, dims = 2): any enum value, any dims."""
    return b"\x08" + _varint(dtype) + b"".join(b"\x10" + _varint(d) for d in dims)


def stream(version=0, version2=0, lod=((0, 1, 2),), desc=None, desc_size=None, data=None):
    """A stream with any field chosen by the test (struct.pack, no headrace writer)."""
    desc = _desc() if desc is None else desc
    out = struct.pack("<IQ", version, len(lod))
    for level in lod:
        out += struct.pack("<Q", 8 * len(level)) + struct.pack(f"<{len(level)}Q", *level)
    out += struct.pack("<Ii", version2, len(desc) if desc_size is None else desc_size) + desc
    return out + (np.arange(4, dtype="<f4").tobytes() if data is None else data)


def test_hand_built_stream_matches_ours():
    assert stream(data=np.array([1, 2, 3, 4], "<f4").tobytes()) == SMALL


def test_every_truncation_is_a_model_file_error(tmp_path):
    path = tmp_path / "t"
    for n in range(len(SMALL)):
        path.write_bytes(SMALL[:n])
        with pytest.raises(ModelFileError) as e:
            hio.read_tensor_file(str(path))
        assert str(path) in str(e.value), n
        assert "expected" in str(e.value), n


@pytest.mark.parametrize("data, message", [
    (stream(version=1), "unsupported tensor stream version"),
    (stream(version2=7), "unsupported tensor version"),
    (stream(desc=_desc(dtype=99)), "data_type 99"),
    (stream(desc=_desc(dtype=pb.VarType.LOD_TENSOR)), "not a loadable element type"),
    (stream(desc=_desc(dims=(-1, 2))), "negative dimension"),
    (stream(desc=_desc(dims=(2, 2)) + b"\x10", desc_size=len(_desc()) + 1), "TensorDesc"),
    (stream(desc_size=-3), "bad TensorDesc size"),
    (stream(desc_size=10**6), "bad TensorDesc size"),
    (stream(desc_size=len(_desc()) - 1), None),
    (stream(desc_size=len(_desc()) + 4), None),
    (stream(desc=b"\x0a\xff\xff"), "does not parse"),
    (stream(desc=b""), "no valid data type"),
    (stream(desc=_desc(dims=(2**40, 2**20))), "ends inside the data"),
    (stream(lod=((0, 1, 3),)), "LoD"),
    (stream(lod=((1, 2),)), "LoD"),
    (stream() + b"\x00", "unexpected bytes"),
    (stream(data=np.arange(3, dtype="<f4").tobytes()), "ends inside the data"),
    (struct.pack("<IQ", 0, 2**61) + b"\x00" * 32, "impossible LoD level count"),
    (struct.pack("<IQQ", 0, 1, 12) + b"\x00" * 40, "not a multiple of 8"),
    (stream(desc=_desc(dtype=0, dims=(2,)), lod=(), data=b"\x01\x02"), "bool"),
], ids=lambda p: p if isinstance(p, str) else None)
def test_corrupt_files_are_model_file_errors(tmp_path, data, message):
    path = tmp_path / "bad"
    path.write_bytes(data)
    with pytest.raises(ModelFileError, match=message) as e:
        hio.read_tensor_file(str(path))
    assert str(path) in str(e.value)


def test_flipped_bytes_never_crash(tmp_path):
    path = tmp_path / "f"
    for i in range(len(SMALL)):
        for flip in (0x01, 0x80, 0xFF):
            data = bytearray(SMALL)
            data[i] ^= flip
            path.write_bytes(bytes(data))
            try:
                a, lod = hio.read_tensor_file(str(path))
            except ModelFileError:
                continue
            assert a.shape[0] == (lod[-1][-1] if lod else a.shape[0])


def test_truncated_parameter_of_an_inference_model(tmp_path):
    prog, v = mlp()
    scope, _ = mlp_scope()
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], ["z"], exe, prog, params_filename="p",
                             scope=scope)
    data = (tmp_path / "p").read_bytes()
    for n in range(0, len(data), 7):
        (tmp_path / "p").write_bytes(data[:n])
        fresh = hr.Scope()
        with pytest.raises(ModelFileError) as e:
            hio.load_inference_model(str(tmp_path), exe, params_filename="p", scope=fresh)
        assert str(tmp_path / "p") in str(e.value)
        assert fresh.names() == []


# -- atomic writes -----------------------------------------------------------------------------

def _saved(directory, filename=None):
    """Persistables saved into ``directory``; returns (program, scope with new values, the
    files' bytes as saved)."""
    prog, scope = state_program()
    hio.save_persistables(None, str(directory), prog, filename=filename, scope=scope)
    before = _files(directory)
    for name, v in VALUES.items():  # new values, so a replaced file would differ
        if v.size:
            scope.set(name, hr.Tensor(np.ones_like(v), LOD.get(name)))
    return prog, scope, before


def _files(directory):
    return {n: (directory / n).read_bytes() for n in os.listdir(directory)}


@pytest.mark.parametrize("filename", [None, "__params__"])
def test_failing_writer_keeps_previous_files(tmp_path, monkeypatch, filename):
    prog, scope, before = _saved(tmp_path, filename)
    real, calls = persist_mod.write_tensor, []

    def failing(f, *args):
        calls.append(1)
        if len(calls) == 3:
            f.write(b"partial")
            raise OSError(28, "No space left on device")
        return real(f, *args)
    monkeypatch.setattr(persist_mod, "write_tensor", failing)
    with pytest.raises(OSError, match="No space"):
        hio.save_persistables(None, str(tmp_path), prog, filename=filename, scope=scope)
    assert _files(tmp_path) == before
    assert no_temp_files(tmp_path)


@pytest.mark.parametrize("failing_call", [1, 3])
def test_failing_replace_keeps_every_file_whole(tmp_path, monkeypatch, failing_call):
    old_dir = tmp_path / "old"
    prog, scope, before = _saved(old_dir)
    hio.save_persistables(None, str(tmp_path / "new"), prog, scope=scope)
    after = _files(tmp_path / "new")
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == failing_call:
            raise OSError(5, "I/O error")
        return real(src, dst)
    monkeypatch.setattr(atomic_mod.os, "replace", replace)
    with pytest.raises(OSError, match="I/O error"):
        hio.save_persistables(None, str(old_dir), prog, scope=scope)
    files = _files(old_dir)
    assert set(files) == set(before)
    for name, data in files.items():  # each file is the old or the new one, never partial
        assert data in (before[name], after[name]), name
    replaced = [n for n in files if files[n] != before[n]]
    assert len(replaced) == failing_call - 1
    assert no_temp_files(old_dir)


def test_failing_fsync_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "f"
    hio.write_bytes(str(path), b"old")

    def fsync(fd):
        raise OSError(5, "I/O error")
    monkeypatch.setattr(atomic_mod.os, "fsync", fsync)
    with pytest.raises(OSError):
        hio.write_bytes(str(path), b"new contents")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["f"]


def test_exception_inside_atomic_write(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with hio.atomic_write(str(path)) as f:
            f.write(b"half")
            raise RuntimeError("interrupted")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["f"]
    with hio.atomic_write(str(path)) as f:
        f.write(b"new")
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["f"]


def test_atomic_files_get_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        hio.write_bytes(str(tmp_path / "f"), b"x")
    finally:
        os.umask(umask)
    assert os.stat(tmp_path / "f").st_mode & 0o777 == 0o644


def test_failed_inference_save_keeps_the_previous_model(tmp_path, monkeypatch):
    prog, v = mlp()
    scope, _ = mlp_scope()
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], ["z"], exe, prog, params_filename="p",
                             scope=scope)
    before = _files(tmp_path)
    scope.set("w", hr.Tensor(np.zeros((3, 2), "float32")))
    monkeypatch.setattr(persist_mod, "write_tensor", lambda *a: (_ for _ in ()).throw(
        KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        hio.save_inference_model(str(tmp_path), ["x"], ["h"], exe, prog, params_filename="p",
                                 scope=scope)
    assert _files(tmp_path) == before and no_temp_files(tmp_path)


def test_inference_program_keeps_what_sub_blocks_need(tmp_path):
    # o = conditional_block(c){ o = mul(x, w) } reads w only inside its sub-block; a second,
    # pruned conditional_block owns a sub-block with a parameter of its own.
    prog = hr.Program()
    blk = prog.global_block()
    blk.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    blk.create_var(name="c", shape=[1], dtype="bool", need_check_feed=True)
    for name in ("o", "d"):
        blk.create_var(name=name, shape=[-1, 2], dtype="float32")
    blk.create_parameter("w", [3, 2])
    blk.create_parameter("dead_w", [3, 2])
    for out, param in (("o", "w"), ("d", "dead_w")):
        with prog.block_guard() as sub:
            sub.append_op("mul", {"X": "x", "Y": param}, {"Out": out})
        blk.append_op("conditional_block", {"Cond": ["c"], "Input": ["x"]},
                      {"Out": [out], "Scope": [f"scope_{out}"]},
                      {"sub_block": sub, "is_scalar_condition": True})
    scope = hr.Scope()
    w = rng.standard_normal((3, 2)).astype("float32")
    scope.set("w", hr.Tensor(w))
    scope.set("dead_w", hr.Tensor(np.zeros((3, 2), "float32")))
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x", "c"], ["o"], exe, prog, scope=scope)
    assert sorted(os.listdir(tmp_path)) == ["__model__", "w"]
    fresh = hr.Scope()
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, scope=fresh)
    assert [op.type for op in program.global_block().ops] == ["feed", "feed",
                                                              "conditional_block", "fetch"]
    assert [len(b.ops) for b in program.blocks] == [4, 1, 0]  # the pruned op's block: empty
    assert not program.global_block().has_var("dead_w") and not program.global_block().has_var("d")
    x = rng.standard_normal((4, 3)).astype("float32")
    (out,) = exe.run(program, feed={"x": x, "c": np.array([True])}, fetch_list=fetches,
                     scope=fresh)
    np.testing.assert_allclose(out, x @ w, rtol=1e-5)
