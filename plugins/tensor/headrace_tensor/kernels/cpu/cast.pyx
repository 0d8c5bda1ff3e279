# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""cast: Out = X converted element-wise to out_dtype, C-style.

Every pair of bool, int8, uint8, int16, int32, int64, float32 and float64 is a typed loop
(one specialization per pair, from two fused types): a float becomes an integer by truncation
toward zero, anything becomes bool as ``x != 0`` (NaN included: true), bool reads as 0/1. As in
C, Paddle and NumPy, a NaN or out-of-range float cast to an integer type gives an unspecified
value (never a crash). float16, which C has no type for, converts through NumPy's own C casts.
The source type is X's actual dtype (in_dtype only describes it at build time), and the
result is always a new array, even when the types are equal.
"""
cimport numpy as cnp
from headrace.kernels.common cimport dtype_name, typenum
from ._common cimport as_array

from headrace import dtypes as _dt

cnp.import_array()

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")

ctypedef fused src_t:
    signed char
    unsigned char
    short
    int
    long long
    float
    double

ctypedef fused dst_t:
    signed char
    unsigned char
    short
    int
    long long
    float
    double

cdef enum Code:
    I8 = 0
    U8 = 1
    I16 = 2
    I32 = 3
    I64 = 4
    F32 = 5
    F64 = 6
    BOOL = 7
    OTHER = -1


cdef Code code_of(int t) noexcept:
    if t == cnp.NPY_INT8:
        return I8
    if t == cnp.NPY_UINT8:
        return U8
    if t == cnp.NPY_INT16:
        return I16
    if t == cnp.NPY_INT32:
        return I32
    if t == cnp.NPY_INT64:
        return I64
    if t == cnp.NPY_FLOAT32:
        return F32
    if t == cnp.NPY_FLOAT64:
        return F64
    if t == cnp.NPY_BOOL:
        return BOOL
    return OTHER


cdef void _cast(const src_t* x, dst_t* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        y[i] = <dst_t>x[i]


cdef void _to_bool(const src_t* x, unsigned char* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        y[i] = x[i] != 0


cdef void _from(const src_t* x, void* y, Code dst, Py_ssize_t n) noexcept nogil:
    """Dispatch on the destination type; the source type is fixed by the specialization."""
    if dst == I8:
        _cast(x, <signed char*>y, n)
    elif dst == U8:
        _cast(x, <unsigned char*>y, n)
    elif dst == I16:
        _cast(x, <short*>y, n)
    elif dst == I32:
        _cast(x, <int*>y, n)
    elif dst == I64:
        _cast(x, <long long*>y, n)
    elif dst == F32:
        _cast(x, <float*>y, n)
    elif dst == F64:
        _cast(x, <double*>y, n)
    else:
        _to_bool(x, <unsigned char*>y, n)


cdef void _convert(const void* x, Code src, void* y, Code dst, Py_ssize_t n) noexcept nogil:
    # bool is stored as one byte holding 0 or 1: read it as unsigned char.
    if src == I8:
        _from(<const signed char*>x, y, dst, n)
    elif src == U8 or src == BOOL:
        _from(<const unsigned char*>x, y, dst, n)
    elif src == I16:
        _from(<const short*>x, y, dst, n)
    elif src == I32:
        _from(<const int*>x, y, dst, n)
    elif src == I64:
        _from(<const long long*>x, y, dst, n)
    elif src == F32:
        _from(<const float*>x, y, dst, n)
    else:
        _from(<const double*>x, y, dst, n)


cdef class Cast:
    cdef object out_dtype
    cdef int out_type

    def __init__(self, dict attrs, info=None):
        name = _dt.from_proto(attrs["out_dtype"])
        if name not in DTYPES:
            raise TypeError(f"cast: out_dtype {attrs['out_dtype']} ({name}) has no CPU kernel; "
                            f"supported: {', '.join(DTYPES)}")
        self.out_dtype = _dt.to_numpy(name)
        self.out_type = self.out_dtype.num

    def __call__(self, x):
        cdef cnp.ndarray a = as_array(x, "cast", "X")
        cdef Code src = code_of(typenum(a)), dst = code_of(self.out_type)
        if dtype_name(a) not in DTYPES:
            raise TypeError(f"cast: X has dtype {dtype_name(a)}; supported: "
                            f"{', '.join(DTYPES)}")
        if src == OTHER or dst == OTHER:  # float16 on either side
            return (a.astype(self.out_dtype),)  # astype copies, also for equal types
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a),
                                                 self.out_type, 0)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
        with nogil:
            _convert(cnp.PyArray_DATA(a), src, cnp.PyArray_DATA(out), dst, n)
        return (out,)


KERNELS = [("cast", Cast, DTYPES)]
