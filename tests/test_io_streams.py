"""headrace.io tensor streams: the format, round trips, and corrupt or truncated files."""
import struct

import numpy as np
import pytest

import headrace.io as hio
from headrace.errors import HeadraceError
from headrace.io import ModelFileError
from headrace.proto import framework_pb2 as pb

rng = np.random.default_rng(7)


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
