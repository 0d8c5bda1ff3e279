# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""elementwise_{add,sub,mul,div,max,min,pow} with Paddle's broadcasting (``axis``).

Shapes are aligned once per call (Y's dims placed at ``axis`` of X, or trailing), then one of
two loops runs: a flat loop when the shapes are equal, else a strided loop over the output
whose broadcast dims have stride 0, after merging adjacent dims that broadcast alike (so
[N, C] + [C] is a single 2-D loop whatever N's rank was).
"""
cimport numpy as cnp
from libc.math cimport fmax, fmin, pow as cpow
from ._common cimport contiguous, empty, same_shape, shape_of

cnp.import_array()

FLOATS = ("float32", "float64")
NUMBERS = ("float32", "float64", "int32", "int64")

ctypedef fused num:
    float
    double
    int
    long long

cdef enum:
    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    MAX = 4
    MIN = 5
    POW = 6

cdef int MAXDIM = 16


cdef inline num _apply(int code, num a, num b) noexcept nogil:
    if code == ADD:
        return a + b
    if code == SUB:
        return a - b
    if code == MUL:
        return a * b
    if code == DIV:
        return a / b
    if code == MAX:
        return a if a >= b else b
    if code == MIN:
        return a if a <= b else b
    return <num>cpow(<double>a, <double>b)


cdef void _flat(int code, const num* x, const num* y, num* out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = _apply(code, x[i], y[i])


cdef void _strided(int code, const num* x, const num* y, num* out, int nd,
                   const Py_ssize_t* dims, const Py_ssize_t* sx,
                   const Py_ssize_t* sy) noexcept nogil:
    """out (contiguous, dims) = f(x, y) with element strides sx, sy (0 on broadcast dims)."""
    cdef Py_ssize_t idx[16]
    cdef Py_ssize_t inner = dims[nd - 1], isx = sx[nd - 1], isy = sy[nd - 1]
    cdef Py_ssize_t ox = 0, oy = 0, o = 0, i, total = 1
    cdef int d
    for d in range(nd):
        idx[d] = 0
        total *= dims[d]
    if total == 0:
        return
    while True:
        for i in range(inner):
            out[o + i] = _apply(code, x[ox + i * isx], y[oy + i * isy])
        o += inner
        d = nd - 2
        while d >= 0:
            idx[d] += 1
            ox += sx[d]
            oy += sy[d]
            if idx[d] < dims[d]:
                break
            ox -= sx[d] * dims[d]
            oy -= sy[d] * dims[d]
            idx[d] = 0
            d -= 1
        if d < 0:
            return


cdef tuple _align(tuple xs, tuple ys, int axis):
    """(x dims, y dims) padded to one rank following Paddle's axis rule."""
    cdef int nx = len(xs), ny = len(ys)
    if axis == -1 or nx == ny:
        r = max(nx, ny)
        return (1,) * (r - nx) + xs, (1,) * (r - ny) + ys
    # Paddle trims the smaller operand's trailing 1s before aligning it at axis.
    while nx > ny > 1 and ys[-1] == 1 and axis + ny > nx:
        ys, ny = ys[:-1], ny - 1
    while ny > nx > 1 and xs[-1] == 1 and axis + nx > ny:
        xs, nx = xs[:-1], nx - 1
    if nx > ny:
        if not 0 <= axis <= nx - ny:
            raise ValueError(f"axis={axis} does not align Y{list(ys)} inside X{list(xs)}")
        return xs, (1,) * axis + ys + (1,) * (nx - ny - axis)
    if not 0 <= axis <= ny - nx:
        raise ValueError(f"axis={axis} does not align X{list(xs)} inside Y{list(ys)}")
    return (1,) * axis + xs + (1,) * (ny - nx - axis), ys


cdef class Elementwise:
    cdef int code, axis
    cdef str name
    cdef bint floats_only

    def __init__(self, int code, str name, dict attrs, info=None):
        self.code = code
        self.name = name
        self.axis = attrs.get("axis", -1)
        self.floats_only = code == DIV or code == POW

    def __call__(self, x, y):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef int t = cnp.PyArray_TYPE(a)
        if t != cnp.PyArray_TYPE(b):
            raise TypeError(f"{self.name}: X is {a.dtype} but Y is {b.dtype}")
        cdef cnp.ndarray out
        cdef Py_ssize_t n
        if same_shape(a, b):
            out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a), t, 0)
            n = cnp.PyArray_SIZE(a)
            self._dispatch_flat(t, a, b, out, n)
            return (out,)
        xs, ys = _align(shape_of(a), shape_of(b), self.axis)
        shape = []
        for dx, dy in zip(xs, ys):
            if dx != dy and dx != 1 and dy != 1:
                raise ValueError(f"{self.name}: X{list(shape_of(a))} and Y{list(shape_of(b))} cannot "
                                 f"be broadcast (axis={self.axis})")
            shape.append(dy if dx == 1 else dx)
        out = empty(tuple(shape), t)
        # Element strides of x and y over the output index space, then merge mergeable dims.
        cdef Py_ssize_t dims[16]
        cdef Py_ssize_t sx[16]
        cdef Py_ssize_t sy[16]
        cdef int nd = 0, k
        cdef Py_ssize_t stx = 1, sty = 1
        rx, ry = [], []
        for k in range(len(shape) - 1, -1, -1):
            rx.append(0 if xs[k] == 1 and shape[k] != 1 else stx)
            ry.append(0 if ys[k] == 1 and shape[k] != 1 else sty)
            stx *= xs[k]
            sty *= ys[k]
        rx.reverse()
        ry.reverse()
        for k in range(len(shape)):
            if shape[k] == 1:
                continue
            if nd > 0 and ((sx[nd - 1] == 0) == (rx[k] == 0)) and \
                    ((sy[nd - 1] == 0) == (ry[k] == 0)) and \
                    (sx[nd - 1] == 0 or sx[nd - 1] == rx[k] * shape[k]) and \
                    (sy[nd - 1] == 0 or sy[nd - 1] == ry[k] * shape[k]):
                dims[nd - 1] *= shape[k]
                sx[nd - 1] = rx[k]
                sy[nd - 1] = ry[k]
                continue
            if nd >= MAXDIM:
                raise ValueError(f"{self.name}: more than {MAXDIM} broadcast dims")
            dims[nd] = shape[k]
            sx[nd] = rx[k]
            sy[nd] = ry[k]
            nd += 1
        if nd == 0:
            dims[0], sx[0], sy[0], nd = 1, 0, 0, 1
        self._dispatch_strided(t, a, b, out, nd, dims, sx, sy)
        return (out,)

    cdef _dispatch_flat(self, int t, cnp.ndarray a, cnp.ndarray b, cnp.ndarray out,
                        Py_ssize_t n):
        cdef void* pa = cnp.PyArray_DATA(a)
        cdef void* pb = cnp.PyArray_DATA(b)
        cdef void* po = cnp.PyArray_DATA(out)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _flat(self.code, <float*>pa, <float*>pb, <float*>po, n)
        elif t == cnp.NPY_FLOAT64:
            with nogil:
                _flat(self.code, <double*>pa, <double*>pb, <double*>po, n)
        elif self.floats_only:
            raise TypeError(f"{self.name}: dtype {a.dtype} not supported (float32, float64)")
        elif t == cnp.NPY_INT32:
            with nogil:
                _flat(self.code, <int*>pa, <int*>pb, <int*>po, n)
        elif t == cnp.NPY_INT64:
            with nogil:
                _flat(self.code, <long long*>pa, <long long*>pb, <long long*>po, n)
        else:
            raise TypeError(f"{self.name}: dtype {a.dtype} not supported")

    cdef _dispatch_strided(self, int t, cnp.ndarray a, cnp.ndarray b, cnp.ndarray out, int nd,
                           Py_ssize_t* dims, Py_ssize_t* sx, Py_ssize_t* sy):
        cdef void* pa = cnp.PyArray_DATA(a)
        cdef void* pb = cnp.PyArray_DATA(b)
        cdef void* po = cnp.PyArray_DATA(out)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _strided(self.code, <float*>pa, <float*>pb, <float*>po, nd, dims, sx, sy)
        elif t == cnp.NPY_FLOAT64:
            with nogil:
                _strided(self.code, <double*>pa, <double*>pb, <double*>po, nd, dims, sx, sy)
        elif self.floats_only:
            raise TypeError(f"{self.name}: dtype {a.dtype} not supported (float32, float64)")
        elif t == cnp.NPY_INT32:
            with nogil:
                _strided(self.code, <int*>pa, <int*>pb, <int*>po, nd, dims, sx, sy)
        elif t == cnp.NPY_INT64:
            with nogil:
                _strided(self.code, <long long*>pa, <long long*>pb, <long long*>po, nd,
                         dims, sx, sy)
        else:
            raise TypeError(f"{self.name}: dtype {a.dtype} not supported")


def _maker(int code, str name):
    def make(dict attrs, info=None):
        return Elementwise(code, name, attrs, info)
    make.__name__ = name
    return make


KERNELS = [
    ("elementwise_add", _maker(ADD, "elementwise_add"), NUMBERS),
    ("elementwise_sub", _maker(SUB, "elementwise_sub"), NUMBERS),
    ("elementwise_mul", _maker(MUL, "elementwise_mul"), NUMBERS),
    ("elementwise_div", _maker(DIV, "elementwise_div"), FLOATS),
    ("elementwise_max", _maker(MAX, "elementwise_max"), NUMBERS),
    ("elementwise_min", _maker(MIN, "elementwise_min"), NUMBERS),
    ("elementwise_pow", _maker(POW, "elementwise_pow"), FLOATS),
]
