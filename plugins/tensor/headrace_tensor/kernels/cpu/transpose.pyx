# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""transpose2: Out = X with its dims permuted, into a new contiguous array.

Elements are moved as opaque 1/2/4/8/16-byte units, so one loop per element size serves every
dtype. Before copying, the permutation is simplified: size-1 dims are dropped and dims that
stay neighbours in the same order are merged (NCHW -> NHWC becomes [N, C, HW] -> [N, HW, C]).
Then:
- nothing left to permute: one memcpy;
- a swap of the last two dims behind untouched leading ones (2-D transpose, batched or not):
  cache-blocked tiles, so both the reads and the writes stay within a few cache lines;
- anything else: an odometer over the output's outer dims with a strided inner row (a
  memcpy where the last dim stays last, as [B, L, H, D] -> [B, H, L, D] of attention heads).

transpose2_grad is the same copy by the inverse permutation. The permutation and its checks are
the host plan of kernels/host/transpose.py (shared with the CUDA kernel, cached per shape).
"""
cimport numpy as cnp
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy
from headrace.kernels.common cimport dtype_name, empty, shape_of, typenum
from ._common cimport as_array, xshape_of

from ..host.transpose import inverse, permutation

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")

ctypedef struct u128:
    uint64_t lo
    uint64_t hi

ctypedef fused elem:
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    u128

cdef enum:
    TILE = 32   # 32 x 32 elements of up to 16 bytes: a tile of X and one of Out fit in L1
    MAXD = 64   # NumPy's most dims


cdef void _batched_2d(const elem* x, elem* y, Py_ssize_t B, Py_ssize_t R,
                      Py_ssize_t C) noexcept nogil:
    """y[b, c, r] = x[b, r, c] in TILE x TILE blocks; the inner loop runs along the output
    row (contiguous writes), which measured faster than contiguous reads."""
    cdef Py_ssize_t b, r0, c0, r, c, r1, c1
    cdef const elem* xb
    cdef elem* yb
    for b in range(B):
        xb = x + b * R * C
        yb = y + b * R * C
        c0 = 0
        while c0 < C:
            c1 = c0 + TILE if c0 + TILE < C else C
            r0 = 0
            while r0 < R:
                r1 = r0 + TILE if r0 + TILE < R else R
                for c in range(c0, c1):
                    for r in range(r0, r1):
                        yb[c * R + r] = xb[r * C + c]
                r0 = r1
            c0 = c1


cdef void _general(const elem* x, elem* y, int nd, const Py_ssize_t* dims,
                   const Py_ssize_t* strides) noexcept nogil:
    """y (contiguous, dims in output order) = x read at element ``strides`` per output dim;
    nd >= 2 and every dim > 0."""
    cdef Py_ssize_t idx[MAXD]
    cdef Py_ssize_t off = 0, j, inner = dims[nd - 1], s = strides[nd - 1]
    cdef int k
    for k in range(nd):
        idx[k] = 0
    while True:
        if s == 1:   # the last dim stays last (heads split off a row): whole runs at a time
            memcpy(y, x + off, inner * sizeof(elem))
        else:
            for j in range(inner):
                y[j] = x[off + j * s]
        y += inner
        k = nd - 2
        while k >= 0:
            idx[k] += 1
            off += strides[k]
            if idx[k] < dims[k]:
                break
            off -= strides[k] * dims[k]
            idx[k] = 0
            k -= 1
        if k < 0:
            return


cdef tuple simplify(tuple shape, list perm):
    """(input dims, permutation) with size-1 dims dropped and neighbour dims merged."""
    keep = [ax for ax in range(len(shape)) if shape[ax] != 1]
    pos = {ax: i for i, ax in enumerate(keep)}
    p = [pos[ax] for ax in perm if ax in pos]
    dims = [shape[ax] for ax in keep]
    groups = []  # runs of input axes that stay together, in output order
    last = None
    for ax in p:
        if last is not None and last[len(last) - 1] + 1 == ax:
            last.append(ax)
        else:
            last = [ax]
            groups.append(last)
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])  # groups in input order
    merged = []
    for g in order:
        n = 1
        for ax in groups[g]:
            n *= dims[ax]
        merged.append(n)
    at = {g: i for i, g in enumerate(order)}
    return merged, [at[g] for g in range(len(groups))]


cdef int _run(int size, const void* x, void* y, list dims, list perm) except -1:
    """Dispatch on the element size and the simplified permutation's shape."""
    cdef int nd = len(dims), k
    cdef Py_ssize_t B = 1, R, C, total = 1
    cdef Py_ssize_t odims[MAXD]
    cdef Py_ssize_t ostr[MAXD]
    cdef Py_ssize_t istr[MAXD]
    for d in dims:
        total *= <Py_ssize_t>d
    if perm == list(range(nd)):
        with nogil:
            memcpy(y, x, total * size)
        return 0
    if perm[nd - 2] == nd - 1 and perm[nd - 1] == nd - 2 and perm[:nd - 2] == list(range(nd - 2)):
        for k in range(nd - 2):
            B *= <Py_ssize_t>dims[k]
        R, C = dims[nd - 2], dims[nd - 1]
        with nogil:
            if size == 1:
                _batched_2d(<const uint8_t*>x, <uint8_t*>y, B, R, C)
            elif size == 2:
                _batched_2d(<const uint16_t*>x, <uint16_t*>y, B, R, C)
            elif size == 4:
                _batched_2d(<const uint32_t*>x, <uint32_t*>y, B, R, C)
            elif size == 8:
                _batched_2d(<const uint64_t*>x, <uint64_t*>y, B, R, C)
            else:
                _batched_2d(<const u128*>x, <u128*>y, B, R, C)
        return 0
    istr[nd - 1] = 1
    for k in range(nd - 2, -1, -1):
        istr[k] = istr[k + 1] * <Py_ssize_t>dims[k + 1]
    for k in range(nd):
        odims[k] = dims[perm[k]]
        ostr[k] = istr[<int>perm[k]]
    with nogil:
        if size == 1:
            _general(<const uint8_t*>x, <uint8_t*>y, nd, odims, ostr)
        elif size == 2:
            _general(<const uint16_t*>x, <uint16_t*>y, nd, odims, ostr)
        elif size == 4:
            _general(<const uint32_t*>x, <uint32_t*>y, nd, odims, ostr)
        elif size == 8:
            _general(<const uint64_t*>x, <uint64_t*>y, nd, odims, ostr)
        else:
            _general(<const u128*>x, <u128*>y, nd, odims, ostr)
    return 0


cdef cnp.ndarray transposed(cnp.ndarray a, tuple shape, list perm, str op):
    """A new contiguous array: ``a`` (contiguous, dims ``shape``) with dims permuted by
    ``perm`` (a checked permutation of 0..rank-1)."""
    cdef int size = cnp.PyArray_ITEMSIZE(a)
    cdef cnp.ndarray out = empty(tuple([shape[ax] for ax in perm]), cnp.PyArray_TYPE(a))
    if cnp.PyArray_SIZE(a) == 0:
        return out
    if size not in (1, 2, 4, 8, 16):
        raise TypeError(f"{op}: elements of {size} bytes ({a.dtype}) are not supported")
    dims, p = simplify(shape, perm)
    if not dims:  # a single element
        dims, p = [1], [0]
    _run(size, cnp.PyArray_DATA(a), cnp.PyArray_DATA(out), dims, p)
    return out


cdef class Transpose2:
    cdef tuple axis

    def __init__(self, dict attrs, info=None):
        self.axis = tuple([int(a) for a in attrs["axis"]])

    def __call__(self, x):
        cdef cnp.ndarray a = as_array(x, "transpose2", "X")
        cdef tuple shape = shape_of(a)
        perm = permutation(self.axis, shape, "transpose2")
        return (transposed(a, shape, perm, "transpose2"), xshape_of(a))


GRAD_DTYPES = ("float32", "float64")


cdef class Transpose2Grad:
    """transpose2_grad: (XShape, Out@GRAD) -> (X@GRAD,). Out = X permuted by axis, so
    X@GRAD = Out@GRAD permuted by the inverse permutation (inv[axis[i]] = i); X's dims come
    from XShape ([0] + X.dims) and Out@GRAD must have Out's shape."""
    cdef tuple axis

    def __init__(self, dict attrs, info=None):
        self.axis = tuple([int(a) for a in attrs["axis"]])

    def __call__(self, xshape, dout):
        cdef cnp.ndarray xs = as_array(xshape, "transpose2_grad", "XShape")
        cdef cnp.ndarray g = as_array(dout, "transpose2_grad", "Out@GRAD")
        if cnp.PyArray_NDIM(xs) == 0:
            raise ValueError("transpose2_grad: XShape must be [0] + X.dims (rank >= 1), got a "
                             "0-D tensor")
        if dtype_name(g) not in GRAD_DTYPES:
            raise TypeError(f"transpose2_grad: Out@GRAD has dtype {dtype_name(g)}; supported: "
                            f"{', '.join(GRAD_DTYPES)}")
        if typenum(xs) != typenum(g):
            raise TypeError(f"transpose2_grad: Out@GRAD is {dtype_name(g)} but X (XShape) is "
                            f"{dtype_name(xs)}")
        cdef tuple gshape = shape_of(g)
        inv = inverse(self.axis, shape_of(xs)[1:], gshape, "transpose2_grad")
        return (transposed(g, gshape, inv, "transpose2_grad"),)


KERNELS = [("transpose2", Transpose2, ALL_DTYPES),
           ("transpose2_grad", Transpose2Grad, GRAD_DTYPES)]
