"""The saved-tensor stream: one LoD tensor in Paddle's binary layout (reference/ir-wire-format.md).

::

    uint32 version = 0
    uint64 lod_level_count, then per level: uint64 byte_count, byte_count / 8 uint64 offsets
    uint32 version = 0
    int32  desc_size, then desc_size bytes of VarType.TensorDesc (data_type, dims)
    numel * itemsize bytes of row-major data

All integers and data are little-endian whatever the host is. The reader trusts nothing: every
length is checked against the bytes left in the file *before* anything is read or allocated, so
a truncated or corrupt file gives a :class:`ModelFileError` naming the file, the byte offset,
what was expected and what was found, never a crash, a huge allocation or wrong numbers.
"""
import contextlib
import errno
import io
import math
import os
import stat
import struct

import numpy as np

from .. import dtypes
from ..errors import HeadraceError
from ..proto import framework_pb2 as pb
from ..runtime.host_memory import empty_aligned
from ..runtime.tensor import LoDError, check_lod

__all__ = ["ModelFileError", "StreamReader", "write_tensor", "encode_tensor", "read_tensor",
           "open_stream", "read_tensor_file", "decode_tensor", "memory_stream", "read_regular"]

_VERSION = 0
# Element types a stream may hold: those with a NumPy dtype (bfloat16 has none).
_LOADABLE = {dtypes.to_proto(n): dtypes.to_numpy(n) for n in dtypes.DTYPES if n != "bfloat16"}


class ModelFileError(HeadraceError):
    """A model, parameter or checkpoint file that cannot be read as what it should be.

    ``path``, ``offset`` (byte offset of the problem, or None), ``expected`` and ``found`` are
    kept for programmatic use; ``str()`` tells the whole story.
    """

    def __init__(self, message, path=None, offset=None, expected=None, found=None):
        self.reason, self.path, self.offset = message, path, offset
        self.expected, self.found = expected, found
        where = f"file '{path}'" if path is not None else "tensor stream"
        if offset is not None:
            where += f" (byte offset {offset})"
        lines = [f"{where}: {message}"]
        if expected is not None:
            lines.append(f"  expected: {expected}")
        if found is not None:
            lines.append(f"  found:    {found}")
        super().__init__("\n".join(lines))


class StreamReader:
    """Sequential, bounds-checked reads from a binary file object (``path`` names it in errors).

    ``what`` is a prefix for messages, e.g. "tensor 'fc_0.w_0'", set by the caller per tensor.
    """

    def __init__(self, f, path):
        self.f, self.path, self.what = f, path, "tensor"
        self.pos = f.tell()
        f.seek(0, os.SEEK_END)
        self.size = f.tell()
        f.seek(self.pos)

    @property
    def remaining(self):
        return self.size - self.pos

    def fail(self, message, expected=None, found=None, offset=None):
        raise ModelFileError(f"{self.what}: {message}", self.path,
                             self.pos if offset is None else offset, expected, found)

    def _need(self, n, part):
        # Checked before reading or allocating: a corrupt length cannot ask for terabytes.
        if n > self.remaining:
            self.fail(f"the file ends inside the {part} (truncated or not a tensor file)",
                      expected=f"{n} more bytes", found=f"{self.remaining} bytes left "
                      f"(the file has {self.size} bytes)")

    def take(self, n, part):
        """Exactly ``n`` bytes of ``part``; a shorter file is a truncation error."""
        self._need(n, part)
        data = self.f.read(n)
        if len(data) != n:  # the file shrank while being read
            self.fail(f"short read in the {part}", expected=f"{n} bytes", found=f"{len(data)}")
        self.pos += n
        return data

    def take_array(self, dtype, dims, part):
        """A new array of ``dtype``/``dims`` filled from the next bytes (little-endian), read
        straight into its memory: no second copy of a large parameter. Its data starts on a
        64-byte boundary, as the kernels' vector loads want it (host_memory.empty_aligned)."""
        nbytes = math.prod(dims) * dtype.itemsize  # Python ints: huge claimed dims cannot wrap
        self._need(nbytes, part)
        array = empty_aligned(dims, dtype)
        n = self.f.readinto(array.reshape(-1).view(np.uint8))
        if n != nbytes:
            self.fail(f"short read in the {part}", expected=f"{nbytes} bytes", found=f"{n}")
        self.pos += nbytes
        if not np.little_endian:  # the file is little-endian; this host is not
            array.byteswap(inplace=True)
        return array

    def unpack(self, fmt, part):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), part))[0]

    def expect_end(self, context):
        """No bytes may follow what was read (a file holding exactly what ``context`` says)."""
        if self.remaining:
            self.fail(f"{self.remaining} unexpected bytes after {context}; the file does not "
                      f"match what is being loaded", expected=f"the file to end at byte "
                      f"{self.pos}", found=f"{self.size} bytes")


# -- writing ------------------------------------------------------------------------------------

def _desc_bytes(dtype_enum, dims):
    desc = pb.VarType.TensorDesc()
    desc.data_type = dtype_enum
    desc.dims.extend(dims)
    return desc.SerializeToString(deterministic=True)


def write_tensor(f, array, lod=None, name="tensor"):
    """Write ``array`` (host data) with ``lod`` (list of offset lists) as one stream to ``f``."""
    array = np.asarray(array)
    try:
        # uint64 is the wire's SIZE_T; dtypes.canonical knows it only by the name "size_t".
        enum = pb.VarType.SIZE_T if array.dtype == np.uint64 else dtypes.to_proto(array.dtype)
    except HeadraceError:
        raise HeadraceError(f"cannot save {name}: dtype {array.dtype} has no tensor-stream "
                            f"type; savable: {', '.join(n for n in dtypes.DTYPES)}") from None
    lod = check_lod(lod, array.shape[0] if array.ndim else 0, name) if lod else []
    f.write(struct.pack("<IQ", _VERSION, len(lod)))
    for level in lod:
        f.write(struct.pack("<Q", 8 * len(level)))
        f.write(np.asarray(level, dtype="<u8").tobytes())
    desc = _desc_bytes(enum, array.shape)
    f.write(struct.pack("<Ii", _VERSION, len(desc)))
    f.write(desc)
    # Little-endian, row-major, written from a flat byte view (no extra copy when possible).
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    f.write(data.reshape(-1).view(np.uint8))


def encode_tensor(array, lod=None):
    """The stream bytes of one tensor."""
    import io
    buf = io.BytesIO()
    write_tensor(buf, array, lod)
    return buf.getvalue()


# -- reading ------------------------------------------------------------------------------------

def _parse_desc(r, raw, start):
    desc = pb.VarType.TensorDesc()
    try:
        desc.ParseFromString(raw)
    except Exception as e:  # DecodeError and friends: bytes that are not a TensorDesc
        r.fail(f"the TensorDesc does not parse ({type(e).__name__}: {e})", offset=start)
    if not desc.HasField("data_type"):
        # proto2 keeps an enum value it does not know among the unknown fields: report it.
        found = "no data_type field"
        try:
            from google.protobuf import unknown_fields
            vals = [u.data for u in unknown_fields.UnknownFieldSet(desc) if u.field_number == 1]
            if vals:
                found = f"data_type {vals[-1]}, which is not a VarType.Type value"
        except Exception:  # an older protobuf without the API: the generic message stands
            pass
        r.fail("the TensorDesc has no valid data type", offset=start,
               expected="a VarType.Type element type (BOOL 0 ... FP64 6, UINT8 20, ...)",
               found=found)
    if desc.data_type not in _LOADABLE:
        r.fail("the TensorDesc's data type is not a loadable element type", offset=start,
               expected=", ".join(f"{dtypes.from_proto(e)} ({e})" for e in sorted(_LOADABLE)),
               found=f"{dtypes.from_proto(desc.data_type)} ({desc.data_type})")
    dims = list(desc.dims)
    if any(d < 0 for d in dims):
        r.fail("the TensorDesc has a negative dimension; a saved tensor's dims are all known",
               offset=start, expected="dims >= 0", found=f"dims {dims}")
    return _LOADABLE[desc.data_type], dims


def read_tensor(r):
    """Read one stream at the reader's position; returns ``(array, lod)``."""
    start = r.pos
    version = r.unpack("<I", "stream version")
    if version != _VERSION:
        r.fail("unsupported tensor stream version (not a tensor file, or a corrupt one)",
               expected=_VERSION, found=version, offset=start)
    levels = r.unpack("<Q", "LoD level count")
    if levels * 8 > r.remaining:  # each level needs at least its 8-byte size
        r.fail("impossible LoD level count (corrupt header)", offset=r.pos - 8,
               expected=f"at most {r.remaining // 8} levels in the {r.remaining} bytes left",
               found=levels)
    lod = []
    for i in range(levels):
        nbytes = r.unpack("<Q", f"size of LoD level {i}")
        if nbytes % 8:
            r.fail(f"LoD level {i}'s byte size is not a multiple of 8", offset=r.pos - 8,
                   expected="8 * number of offsets", found=nbytes)
        lod.append(np.frombuffer(r.take(nbytes, f"offsets of LoD level {i}"), "<u8").tolist())
    version = r.unpack("<I", "tensor version")
    if version != _VERSION:
        r.fail("unsupported tensor version", offset=r.pos - 4, expected=_VERSION, found=version)
    desc_size = r.unpack("<i", "TensorDesc size")
    if desc_size < 0 or desc_size > r.remaining:
        r.fail("bad TensorDesc size", offset=r.pos - 4,
               expected=f"0 to {r.remaining} (the bytes left)", found=desc_size)
    desc_start = r.pos
    dtype, dims = _parse_desc(r, r.take(desc_size, "TensorDesc"), desc_start)
    data_start = r.pos
    nbytes = math.prod(dims) * dtype.itemsize
    array = r.take_array(dtype, dims, f"data ({dtype.name}{dims}, {nbytes} bytes)")
    if dtype == np.bool_ and array.size and array.view(np.uint8).max() > 1:
        # NumPy would show such bytes as True but compare them unequal to True.
        r.fail("a bool tensor holds bytes other than 0 and 1 (corrupt data)",
               offset=data_start, expected="0 or 1",
               found=f"byte value {array.view(np.uint8).max()}")
    if lod:
        try:
            lod = check_lod(lod, dims[0] if dims else 0, r.what)
        except LoDError as e:
            r.fail(f"the LoD does not describe the tensor: {e}", offset=start)
    return array, lod


def read_regular(directory, parts, what):
    """The bytes of the regular file ``directory/parts``: no component is followed if it is a
    symbolic link, a FIFO or device is refused before it could block, and no more than the
    file's size is read."""
    path = os.path.join(directory, *parts)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    dir_fd = None
    try:
        dir_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        for p in parts[:-1]:
            fd = os.open(p, flags | getattr(os, "O_DIRECTORY", 0), dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = fd
        fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        raise ModelFileError(f"no such file ({what})", path) from None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) or (
                e.errno == errno.EMLINK and hasattr(os, "O_NOFOLLOW")):
            raise ModelFileError(f"{what}: a symbolic link (or a non-directory) on the path; "
                                 f"links inside a checkpoint are not followed", path) from None
        raise ModelFileError(f"cannot open {what}: {e.strerror or e}", path) from None
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ModelFileError(f"{what} is not a regular file (mode "
                                 f"{stat.filemode(st.st_mode)}); it is not read", path)
        os.set_blocking(f.fileno(), True)
        return f.read(st.st_size)


def open_stream(path, what="file"):
    """``with open_stream(path) as r:`` a :class:`StreamReader` over the regular file ``path``
    (read as :func:`read_regular` reads: a missing, linked or special file is a
    ModelFileError)."""
    directory, name = os.path.split(os.path.abspath(path))
    return memory_stream(read_regular(directory, (name,), what), path)


def read_tensor_file(path, what="tensor"):
    """The single tensor ``(array, lod)`` a file holds; trailing bytes are an error."""
    with open_stream(path, what) as r:
        r.what = what
        out = read_tensor(r)
        r.expect_end(what)
        return out


def memory_stream(data, path=None):
    """``with memory_stream(data, path) as r:`` a :class:`StreamReader` over bytes already
    read (and checked) from ``path``, which errors name."""
    return contextlib.nullcontext(StreamReader(io.BytesIO(bytes(data)), path))


def decode_tensor(data, what="tensor", path=None):
    """``(array, lod)`` from the bytes of exactly one stream (read from ``path``, if given)."""
    r = StreamReader(io.BytesIO(bytes(data)), path)
    r.what = what
    out = read_tensor(r)
    r.expect_end(what)
    return out
