"""Element types: one canonical name per type, and the mappings to NumPy and to the wire enum.

headrace speaks of dtypes by NumPy-style names ("float32", "int64", "bool"). The wire uses the
VarType.Type enum (FP32 = 5 ...). :func:`canonical` accepts any spelling a user may write: a
name, a NumPy dtype or scalar type, or a wire enum value.
"""
import numpy as np

from .errors import VariableError
from .proto import framework_pb2 as pb

__all__ = ["canonical", "to_proto", "from_proto", "to_numpy", "DTYPES", "FLOAT_DTYPES",
           "INT_DTYPES"]

_T = pb.VarType
# canonical name -> wire enum; numpy-less types (bfloat16) still have a name for programs
# that use them
_NAME_TO_PROTO = {
    "bool": _T.BOOL, "int16": _T.INT16, "int32": _T.INT32, "int64": _T.INT64,
    "float16": _T.FP16, "float32": _T.FP32, "float64": _T.FP64, "uint8": _T.UINT8,
    "int8": _T.INT8, "bfloat16": _T.BF16, "complex64": _T.COMPLEX64,
    "complex128": _T.COMPLEX128, "size_t": _T.SIZE_T,
}
_PROTO_TO_NAME = {v: k for k, v in _NAME_TO_PROTO.items()}
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "int": "int32",
            "long": "int64", "fp16": "float16", "fp32": "float32", "fp64": "float64",
            "bf16": "bfloat16", "uint64": "size_t"}

DTYPES = tuple(_NAME_TO_PROTO)
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int8", "uint8", "int16", "int32", "int64")


def canonical(dtype):
    """The canonical name of ``dtype`` (str, NumPy dtype/type, or wire enum int)."""
    if type(dtype) is str and dtype in _NAME_TO_PROTO:  # canonical already: the usual case
        return dtype
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype.lower(), dtype.lower())
        if name in _NAME_TO_PROTO:
            return name
    elif isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        if int(dtype) in _PROTO_TO_NAME:
            return _PROTO_TO_NAME[int(dtype)]
    elif dtype is not None:  # np.dtype(None) would be float64
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name == "uint64":
            return "size_t"
        if name in _NAME_TO_PROTO:
            return name
    raise VariableError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")


def to_proto(dtype):
    """The VarType.Type enum value of ``dtype``."""
    return _NAME_TO_PROTO[canonical(dtype)]


def from_proto(value):
    """The canonical name of a wire enum value (unknown values give 'unknown(N)')."""
    name = _PROTO_TO_NAME.get(value)   # (the message is not formatted for known values)
    return f"unknown({value})" if name is None else name


def to_numpy(dtype):
    """The NumPy dtype of ``dtype`` (bfloat16 has none: an error)."""
    name = canonical(dtype)
    if name == "bfloat16":
        raise VariableError("bfloat16 has no NumPy dtype")
    return np.dtype("uint64" if name == "size_t" else name)
