# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""logical_and, logical_or, logical_xor (NumPy broadcasting) and logical_not, on bool.

Bytes are read as truth values (nonzero is true) and written as 0/1, so even a bool array
built from arbitrary bytes gives a proper bool result. Broadcasting comes from the shared
``_broadcast.broadcast`` with NumPy's trailing alignment (these ops have no ``axis``).
"""
cimport numpy as cnp
from ._broadcast cimport Bcast, Walk, broadcast, walk_next, walk_start
from headrace.kernels.common cimport contiguous, dtype_name, empty_like, same_shape, typenum

cnp.import_array()

ctypedef unsigned char u8

cdef enum:
    AND, OR, XOR


cdef inline void _row(int code, const u8* x, Py_ssize_t sx, const u8* y, Py_ssize_t sy,
                      u8* out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if code == AND:
        for i in range(n):
            out[i] = (x[i * sx] != 0) & (y[i * sy] != 0)
    elif code == OR:
        for i in range(n):
            out[i] = (x[i * sx] != 0) | (y[i * sy] != 0)
    else:
        for i in range(n):
            out[i] = (x[i * sx] != 0) ^ (y[i * sy] != 0)


cdef void _binary(int code, const u8* x, const u8* y, u8* out, const Bcast* bc) noexcept nogil:
    cdef Walk w
    cdef Py_ssize_t n = bc.dims[bc.nd - 1], isx = bc.sx[bc.nd - 1], isy = bc.sy[bc.nd - 1]
    walk_start(&w, bc)
    while True:
        # Literal strides for the usual rows let the compiler vectorize the inlined loop.
        if isx == 1 and isy == 1:
            _row(code, x + w.ox, 1, y + w.oy, 1, out + w.o, n)
        elif isx == 1 and isy == 0:
            _row(code, x + w.ox, 1, y + w.oy, 0, out + w.o, n)
        elif isx == 0 and isy == 1:
            _row(code, x + w.ox, 0, y + w.oy, 1, out + w.o, n)
        else:
            _row(code, x + w.ox, isx, y + w.oy, isy, out + w.o, n)
        if not walk_next(&w, bc):
            return


cdef inline int _check_bool(str name, str slot, cnp.ndarray a) except -1:
    if typenum(a) != cnp.NPY_BOOL:
        raise TypeError(f"{name}: {slot} has dtype {dtype_name(a)}, expected bool")
    return 0


cdef class Logical:
    cdef int code
    cdef str name

    def __init__(self, int code, str name):
        self.code, self.name = code, name

    def __call__(self, x, y):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef Bcast bc
        _check_bool(self.name, "X", a)
        _check_bool(self.name, "Y", b)
        if same_shape(a, b):
            bc.out_nd = cnp.PyArray_NDIM(a)
            bc.size = cnp.PyArray_SIZE(a)
            bc.nd, bc.dims[0], bc.sx[0], bc.sy[0] = 1, bc.size, 1, 1
            out = cnp.PyArray_EMPTY(bc.out_nd, cnp.PyArray_DIMS(a), cnp.NPY_BOOL, 0)
        else:
            broadcast(a, b, -1, &bc, self.name)
            out = cnp.PyArray_EMPTY(bc.out_nd, bc.out_shape, cnp.NPY_BOOL, 0)
        if bc.size == 0:
            return (out,)
        cdef const u8* pa = <const u8*>cnp.PyArray_DATA(a)
        cdef const u8* pb = <const u8*>cnp.PyArray_DATA(b)
        cdef u8* po = <u8*>cnp.PyArray_DATA(out)
        with nogil:
            _binary(self.code, pa, pb, po, &bc)
        return (out,)


cdef class LogicalNot:
    def __init__(self, dict attrs=None, info=None):
        pass

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        _check_bool("logical_not", "X", a)
        cdef cnp.ndarray out = empty_like(a)
        cdef const u8* pa = <const u8*>cnp.PyArray_DATA(a)
        cdef u8* po = <u8*>cnp.PyArray_DATA(out)
        cdef Py_ssize_t i, n = cnp.PyArray_SIZE(a)
        with nogil:
            for i in range(n):
                po[i] = pa[i] == 0
        return (out,)


def _maker(int code, str name):
    def make(dict attrs, info=None):
        return Logical(code, name)
    make.__name__ = name
    return make


KERNELS = [
    ("logical_and", _maker(AND, "logical_and"), ("bool",)),
    ("logical_or", _maker(OR, "logical_or"), ("bool",)),
    ("logical_xor", _maker(XOR, "logical_xor"), ("bool",)),
    ("logical_not", LogicalNot, ("bool",)),
]
