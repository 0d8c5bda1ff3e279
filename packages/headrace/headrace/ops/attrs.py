"""Attribute types: checking a Python value against a declared type, and the wire encoding.

An attribute type is named by a short string ("int", "floats", "block", ...), each tied to one
``AttrType`` enum value and one value field of ``OpDesc.Attr``. :func:`coerce` turns a user value
into the canonical Python value of that type or says why it cannot; :func:`encode` and
:func:`decode` move canonical values in and out of the protobuf message.
"""
import math
import numbers

import numpy as np

from ..proto import framework_pb2 as pb

__all__ = ["ATTR_TYPES", "coerce", "encode", "encoded_entry", "decode", "guess_type",
           "type_name"]

_INT32 = (-2**31, 2**31 - 1)
_INT64 = (-2**63, 2**63 - 1)

# type name -> (AttrType enum, value field of OpDesc.Attr)
ATTR_TYPES = {
    "int": (pb.INT, "i"), "float": (pb.FLOAT, "f"), "string": (pb.STRING, "s"),
    "ints": (pb.INTS, "ints"), "floats": (pb.FLOATS, "floats"), "strings": (pb.STRINGS, "strings"),
    "bool": (pb.BOOLEAN, "b"), "bools": (pb.BOOLEANS, "bools"), "block": (pb.BLOCK, "block_idx"),
    "long": (pb.LONG, "l"), "blocks": (pb.BLOCKS, "blocks_idx"), "longs": (pb.LONGS, "longs"),
    "float64s": (pb.FLOAT64S, "float64s"), "var": (pb.VAR, "var_name"),
    "vars": (pb.VARS, "vars_name"), "float64": (pb.FLOAT64, "float64"),
}
_ENUM_TO_NAME = {enum: name for name, (enum, _) in ATTR_TYPES.items()}
# wire type -> (type name, value field, whether the value is a list: the plural names, ints,
# floats, strings, bools, blocks, longs, ...): what decode reads, a table a plan reading every
# op's attributes can use without a call per attribute (Operator.attrs).
DECODE = {enum: (name, field, name.endswith("s")) for name, (enum, field) in ATTR_TYPES.items()}


def type_name(enum_value):
    """The type name of an AttrType enum value, or None for types headrace does not decode."""
    return _ENUM_TO_NAME.get(enum_value)


def _int(v, bounds):
    if type(v) is not int:  # a plain int skips the (slow, abstract) class checks
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
            raise TypeError
        v = int(v)
    if not bounds[0] <= v <= bounds[1]:
        raise ValueError(f"{v} is out of range [{bounds[0]}, {bounds[1]}]")
    return v


def _float(v):
    if isinstance(v, (bool, np.bool_)) or \
            not isinstance(v, (numbers.Real, np.floating, np.integer)):
        raise TypeError
    return float(v)


def _float32(v):
    v = _float(v)
    if math.isfinite(v) and abs(v) > 3.4028234663852886e38:
        raise ValueError(f"{v} does not fit in float32")
    return v


def _bool(v):
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError
    return bool(v)


def _str(v):
    if not isinstance(v, str):
        raise TypeError
    return v


def _block_index(v):
    # A Block object (anything with .idx) or its index.
    idx = getattr(v, "idx", v)
    return _int(idx, (0, _INT32[1]))


def _list(item):
    def check(v):
        if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple, np.ndarray)):
            raise TypeError
        return [item(x) for x in v]
    return check


_COERCE = {
    "int": lambda v: _int(v, _INT32), "long": lambda v: _int(v, _INT64),
    "float": _float32, "float64": _float, "string": _str, "bool": _bool,
    "ints": _list(lambda v: _int(v, _INT32)), "longs": _list(lambda v: _int(v, _INT64)),
    "floats": _list(_float32), "float64s": _list(_float), "strings": _list(_str),
    "bools": _list(_bool), "block": _block_index, "blocks": _list(_block_index),
    "var": _str, "vars": _list(_str),
}


def coerce(attr_type, value):
    """Return ``value`` as the canonical Python value of ``attr_type``.

    Raises TypeError (wrong kind of value) or ValueError (right kind, out of range); the caller
    wraps either into an error that names the op and the attribute.
    """
    if attr_type in ("block", "blocks"):
        # Block objects stay Block objects: the Operator keeps them, the desc keeps indices.
        _COERCE[attr_type](value)
        return list(value) if attr_type == "blocks" else value
    return _COERCE[attr_type](value)


def guess_type(value):
    """The attribute type of an undeclared (bookkeeping) attribute value."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (numbers.Integral, np.integer)):
        return "int" if _INT32[0] <= value <= _INT32[1] else "long"
    if isinstance(value, (numbers.Real, np.floating)):
        return "float"
    if isinstance(value, str):
        return "string"
    if hasattr(value, "idx") and hasattr(value, "program"):
        return "block"
    if isinstance(value, (list, tuple)):
        if not value:
            return "ints"
        inner = guess_type(value[0])
        return {"int": "ints", "long": "longs", "float": "floats", "string": "strings",
                "bool": "bools", "block": "blocks"}.get(inner)
    return None


def encode(msg, name, attr_type, value):
    """Fill the OpDesc.Attr ``msg`` with a canonical value of ``attr_type``."""
    enum, field = ATTR_TYPES[attr_type]
    msg.Clear()
    msg.name = name
    msg.type = enum
    if attr_type == "block":
        msg.block_idx = _block_index(value)
    elif attr_type == "blocks":
        msg.blocks_idx.extend(_block_index(b) for b in value)
    elif attr_type in ("ints", "floats", "strings", "bools", "longs", "float64s", "vars"):
        getattr(msg, field).extend(value)
    else:
        setattr(msg, field, value)


_ATTRS_TAG = b"\x22"   # OpDesc field 4 (attrs), length-delimited
_ENTRIES = {}          # (name, type, value) -> (the attrs entry's bytes, its decoded value)
_UNCACHED = ("float", "floats", "float64", "float64s", "block", "blocks")
UNKEPT = object()      # encoded_entry's decoded value of a block reference (see there)


def varint(n):
    """Protobuf's base-128 varint of a non-negative int (a length on the wire)."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encoded_entry(name, attr_type, value):
    """``(entry, decoded)``: the wire bytes of one ``OpDesc.attrs`` entry holding ``value``
    (what ``encode`` into ``desc.attrs.add()`` writes) and what :func:`decode` reads back from
    it (a float rounded to float32, a list as a list; ``UNKEPT`` for block references, which
    an op's attributes give as Block objects). A new op's attributes are written with one
    ``desc.MergeFromString`` of these, and the decoded values are kept by the Operator
    (``Operator.attrs``). Entries repeat from op to op (defaults, roles, call sites), so they
    are serialized once; a float's key carries its sign (0.0 and -0.0 are equal keys with
    different bytes); lists of floats and block references are not cached. A decoded list
    is shared by every op given the same entry: readers copy it."""
    key = None
    if attr_type not in _UNCACHED:
        key = (name, attr_type, tuple(value) if isinstance(value, list) else value)
    elif type(value) is float and attr_type in ("float", "float64"):
        key = (name, attr_type, value, math.copysign(1.0, value))
    if key is not None:
        pair = _ENTRIES.get(key)
        if pair is not None:
            return pair
    msg = pb.OpDesc.Attr()
    encode(msg, name, attr_type, value)
    data = msg.SerializeToString()
    pair = (_ATTRS_TAG + varint(len(data)) + data,
            UNKEPT if attr_type in ("block", "blocks") else decode(msg)[1])
    if key is not None:
        if len(_ENTRIES) > 65536:   # bounded: strings (call sites) can be endless
            _ENTRIES.clear()
        _ENTRIES[key] = pair
    return pair


def decode(msg):
    """(type name, Python value) of an OpDesc.Attr; block attrs give indices.

    Types headrace does not decode (Paddle 3 scalars) give (None, None); the message itself is
    kept untouched in the desc, so the attribute still round-trips.
    """
    how = DECODE.get(msg.type)
    if how is None:
        return None, None
    value = getattr(msg, how[1])
    return how[0], list(value) if how[2] else value
