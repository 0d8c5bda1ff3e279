# cython: language_level=3, boundscheck=False, wraparound=False
"""The attribute entries of a serialized OpDesc, as bytes: the key under which a plan keeps
the attributes it decoded (``Plan._attrs``). Ops built in a loop carry the same attributes
byte for byte (a 200-layer net's 1603 ops hold 409 distinct sets), and decoding an op's
attribute messages through protobuf costs several microseconds an op, serializing the op and
reading its wire here well under one.

Only the wire format's framing is read (tags, varints, lengths), never a value: equal bytes
decode to equal attributes, whatever they hold.
"""

cdef enum:
    ATTRS_TAG = (4 << 3) | 2   # OpDesc.attrs: field 4, length-delimited


cdef inline Py_ssize_t _varint(const unsigned char* p, Py_ssize_t i, Py_ssize_t n,
                               unsigned long long* out) noexcept:
    """Read the varint at ``p[i]`` into ``out``; the index after it, or -1 when it runs past
    ``n`` or over 64 bits."""
    cdef unsigned long long v = 0
    cdef int shift = 0
    cdef unsigned char b
    while i < n and shift < 64:
        b = p[i]
        i += 1
        v |= (<unsigned long long>(b & 0x7f)) << shift
        if b < 0x80:
            out[0] = v
            return i
        shift += 7
    return -1


def attr_entries(bytes wire):
    """The OpDesc attrs entries (field 4, each with its tag and length) of ``wire``, in their
    order, as one bytes object; None when ``wire`` is not well-formed (the caller then
    decodes the op's attributes itself)."""
    cdef const unsigned char* p = wire
    cdef Py_ssize_t n = len(wire), i = 0, start, first = -1, last = -1
    cdef unsigned long long tag, length
    cdef int wt
    cdef list pieces = None
    while i < n:
        start = i
        i = _varint(p, i, n, &tag)
        if i < 0:
            return None
        wt = <int>(tag & 7)
        if wt == 0:
            i = _varint(p, i, n, &length)
            if i < 0:
                return None
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            i = _varint(p, i, n, &length)
            if i < 0 or length > <unsigned long long>(n - i):
                return None
            i += <Py_ssize_t>length
        else:
            return None   # groups (3, 4) and undefined wire types: not in an OpDesc
        if i > n:
            return None
        if tag == ATTRS_TAG:
            if first < 0:
                first = start
            elif start != last:   # entries apart (another field between): rare
                if pieces is None:
                    pieces = []
                pieces.append(wire[first:last])
                first = start
            last = i
    if first < 0:
        return b""
    if pieces is None:
        return wire[first:last]
    pieces.append(wire[first:last])
    return b"".join(pieces)
