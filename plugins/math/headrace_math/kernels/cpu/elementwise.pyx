# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""elementwise_{add,sub,mul,div,max,min,pow} with Paddle's broadcasting (``axis``), and their
grad ops. Integer division truncates toward zero and refuses a 0 divisor, as Paddle's does.

A flat loop runs when the shapes are equal; otherwise the shapes are aligned once per call by
the shared ``_broadcast.broadcast`` (Y's dims placed at ``axis`` of X, or trailing), which also
merges adjacent dims that broadcast alike, and a strided loop walks the output row by row with
stride 0 on the broadcast dims (so [N, C] + [C] is a single 2-D loop whatever N's rank was).
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport log, pow as cpow, powf
from headrace.kernels.threads cimport ELEMENT_GRAIN, split_at, threads_for
from ._broadcast cimport Bcast, Walk, broadcast, walk_next, walk_start
from cpython.object cimport PyObject
from headrace.kernels.common cimport contiguous, dtype_name, real, same_shape, shape_of, typenum
from ._common cimport is_nan, recycled

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


cdef inline void _row(int code, const num* x, Py_ssize_t sx, const num* y, Py_ssize_t sy,
                      num* out, Py_ssize_t n) noexcept nogil:
    """One row of out = f(x, y). The op is chosen once, outside the element loops, so that
    each loop (inlined with literal strides by the callers) vectorizes."""
    cdef Py_ssize_t i
    cdef num a, b
    if code == ADD:
        for i in range(n):
            out[i] = x[i * sx] + y[i * sy]
    elif code == SUB:
        for i in range(n):
            out[i] = x[i * sx] - y[i * sy]
    elif code == MUL:
        for i in range(n):
            out[i] = x[i * sx] * y[i * sy]
    elif code == DIV:
        if num is float or num is double:
            for i in range(n):
                out[i] = x[i * sx] / y[i * sy]
        elif num is int:
            # C truncates toward zero, as Paddle's integer divide; INT_MIN / -1 (a trap on
            # x86) wraps to INT_MIN as NumPy's does. Divisors of 0 were refused by the caller.
            for i in range(n):
                a, b = x[i * sx], y[i * sy]
                out[i] = <int>(<unsigned int>0 - <unsigned int>a) if b == -1 else a / b
        else:
            for i in range(n):
                a, b = x[i * sx], y[i * sy]
                out[i] = <long long>(<unsigned long long>0 - <unsigned long long>a) \
                    if b == -1 else a / b
    elif code == MAX:
        # max/min propagate NaN from either side, as NumPy's maximum/minimum do (``|``,
        # not ``or``: a short-circuit branch would keep the loop from vectorizing).
        for i in range(n):
            a, b = x[i * sx], y[i * sy]
            out[i] = a if (a >= b) | is_nan(a) else b
    elif code == MIN:
        for i in range(n):
            a, b = x[i * sx], y[i * sy]
            out[i] = a if (a <= b) | is_nan(a) else b
    elif num is float:
        # glibc's powf is within an ulp and about 3x faster than pow in double.
        for i in range(n):
            out[i] = powf(x[i * sx], y[i * sy])
    else:
        for i in range(n):
            out[i] = <num>cpow(<double>x[i * sx], <double>y[i * sy])


cdef void _flat(int code, const num* x, const num* y, num* out, Py_ssize_t n) noexcept nogil:
    """Equal shapes: one flat row, split over hr.set_num_threads' threads when there are
    ELEMENT_GRAIN values a thread (each value's result is the serial one)."""
    cdef int t, nt = threads_for(<double>n, ELEMENT_GRAIN)
    cdef Py_ssize_t i0
    if nt <= 1:
        _row(code, x, 1, y, 1, out, n)
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        i0 = split_at(n, t, nt)
        _row(code, x + i0, 1, y + i0, 1, out + i0, split_at(n, t + 1, nt) - i0)


cdef void _strided(int code, const num* x, const num* y, num* out,
                   const Bcast* bc) noexcept nogil:
    """out (contiguous) = f(x, y), row by row over the merged broadcast dims."""
    cdef Walk w
    cdef Py_ssize_t n = bc.dims[bc.nd - 1], isx = bc.sx[bc.nd - 1], isy = bc.sy[bc.nd - 1]
    walk_start(&w, bc)
    while True:
        # Literal strides for the usual rows (both contiguous, or one side a broadcast
        # scalar) let the compiler vectorize them once _row is inlined.
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


cdef class Elementwise:
    cdef int code, axis
    cdef str name
    cdef bint floats_only
    cdef object _out       # the last result, reused when nothing else holds it (recycled)

    def __init__(self, int code, str name, dict attrs, info=None):
        self.code = code
        self.name = name
        self.axis = attrs.get("axis", -1)
        self.floats_only = code == POW

    def __call__(self, x, y):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef int t = typenum(a)
        if t != typenum(b):
            raise TypeError(f"{self.name}: X is {dtype_name(a)} but Y is {dtype_name(b)}")
        self._check_dtype(t, a)
        if self.code == DIV and t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64 and not b.all():
            # (Paddle enforces the same: an integer x / 0 has no value)
            raise ValueError(f"{self.name}: integer division by zero (Y holds a 0)")
        cdef cnp.ndarray out
        cdef Bcast bc
        if same_shape(a, b):
            out = self._out = recycled(<PyObject*>self._out, shape_of(a), t)
            self._dispatch_flat(t, a, b, out, cnp.PyArray_SIZE(a))
            return (out,)
        broadcast(a, b, self.axis, &bc, self.name)
        cdef int k
        out = self._out = recycled(<PyObject*>self._out,
                                   tuple([bc.out_shape[k] for k in range(bc.out_nd)]), t)
        if bc.size:
            self._dispatch_strided(t, a, b, out, &bc)
        return (out,)

    cdef int _check_dtype(self, int t, cnp.ndarray a) except -1:
        if t == cnp.NPY_FLOAT32 or t == cnp.NPY_FLOAT64:
            return 0
        if not self.floats_only and (t == cnp.NPY_INT32 or t == cnp.NPY_INT64):
            return 0
        raise TypeError(f"{self.name}: dtype {dtype_name(a)} not supported ("
                        + ("float32, float64)" if self.floats_only else
                           "float32, float64, int32, int64)"))

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
        elif t == cnp.NPY_INT32:
            with nogil:
                _flat(self.code, <int*>pa, <int*>pb, <int*>po, n)
        else:
            with nogil:
                _flat(self.code, <long long*>pa, <long long*>pb, <long long*>po, n)

    cdef _dispatch_strided(self, int t, cnp.ndarray a, cnp.ndarray b, cnp.ndarray out,
                           const Bcast* bc):
        cdef void* pa = cnp.PyArray_DATA(a)
        cdef void* pb = cnp.PyArray_DATA(b)
        cdef void* po = cnp.PyArray_DATA(out)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _strided(self.code, <float*>pa, <float*>pb, <float*>po, bc)
        elif t == cnp.NPY_FLOAT64:
            with nogil:
                _strided(self.code, <double*>pa, <double*>pb, <double*>po, bc)
        elif t == cnp.NPY_INT32:
            with nogil:
                _strided(self.code, <int*>pa, <int*>pb, <int*>po, bc)
        else:
            with nogil:
                _strided(self.code, <long long*>pa, <long long*>pb, <long long*>po, bc)


def _maker(int code, str name):
    def make(dict attrs, info=None):
        return Elementwise(code, name, attrs, info)
    make.__name__ = name
    return make


# -- gradients --------------------------------------------------------------------------------
#
# dOut/dX and dOut/dY times Out@GRAD are formed a chunk of an output row at a time (in double,
# into a small stack buffer), then stored: straight into the gradient when its operand has
# the output's shape, otherwise added into a double accumulator at the operand's positions
# (stride 0 along the dims it was broadcast over, so those sum), which is rounded once at the
# end. The same broadcast walk as the forward op visits the rows.

cdef enum:
    CHUNK = 256


cdef void _grad_chunk(int code, bint for_x, const real* x, Py_ssize_t sx, const real* y,
                      Py_ssize_t sy, const real* o, const real* d, double* g,
                      Py_ssize_t n) noexcept nogil:
    """g[i] = Out@GRAD times the derivative of Out w.r.t. X (for_x) or Y at n consecutive
    output positions; X and Y are read with strides sx, sy, Out and Out@GRAD contiguously."""
    cdef Py_ssize_t i
    cdef double a, b, e
    if code == ADD or (code == SUB and for_x):
        for i in range(n):
            g[i] = d[i]
    elif code == SUB:
        for i in range(n):
            g[i] = -<double>d[i]
    elif code == MUL:
        if for_x:
            for i in range(n):
                g[i] = <double>d[i] * y[i * sy]
        else:
            for i in range(n):
                g[i] = <double>d[i] * x[i * sx]
    elif code == DIV:
        if for_x:
            for i in range(n):
                g[i] = <double>d[i] / y[i * sy]
        else:
            for i in range(n):
                g[i] = -<double>d[i] * o[i] / y[i * sy]
    # (selects load Out@GRAD unconditionally: a load in one arm only is not if-converted)
    elif code == MAX:       # Paddle: X where X > Y, Y otherwise (ties and NaN go to Y)
        if for_x:
            for i in range(n):
                e = d[i]
                g[i] = e if x[i * sx] > y[i * sy] else 0.0
        else:
            for i in range(n):
                e = d[i]
                g[i] = 0.0 if x[i * sx] > y[i * sy] else e
    elif code == MIN:
        if for_x:
            for i in range(n):
                e = d[i]
                g[i] = e if x[i * sx] < y[i * sy] else 0.0
        else:
            for i in range(n):
                e = d[i]
                g[i] = 0.0 if x[i * sx] < y[i * sy] else e
    elif for_x:             # POW: d(x**y)/dx = y x**(y-1)
        for i in range(n):
            a, b = x[i * sx], y[i * sy]
            g[i] = <double>d[i] * b * cpow(a, b - 1.0)
    else:                   # d(x**y)/dy = x**y ln x; 0 at x == 0 (0**y is flat for y > 0)
        for i in range(n):
            a, b = x[i * sx], y[i * sy]
            g[i] = 0.0 if a == 0 else <double>d[i] * cpow(a, b) * log(a)


cdef void _grad_walk(int code, bint for_x, const real* x, const real* y, const real* o,
                     const real* d, real* direct, double* acc, const Bcast* bc) noexcept nogil:
    """X@GRAD (for_x) or Y@GRAD over every output row: stored into ``direct`` when the
    operand has the output's size, else summed into ``acc`` (the operand's size)."""
    cdef Walk w
    cdef double g[CHUNK]
    cdef int nd = bc.nd
    cdef Py_ssize_t n = bc.dims[nd - 1], isx = bc.sx[nd - 1], isy = bc.sy[nd - 1]
    cdef Py_ssize_t st = isx if for_x else isy
    cdef Py_ssize_t c, m, i, off
    cdef double s
    walk_start(&w, bc)
    while True:
        c = 0
        while c < n:
            m = n - c if n - c < CHUNK else CHUNK
            _grad_chunk(code, for_x, x + w.ox + c * isx, isx, y + w.oy + c * isy, isy,
                        o + w.o + c, d + w.o + c, g, m)
            off = (w.ox if for_x else w.oy) + c * st
            if direct != NULL:
                for i in range(m):
                    direct[off + i * st] = <real>g[i]
            elif st == 0:
                s = 0.0
                for i in range(m):
                    s += g[i]
                acc[off] += s
            elif st == 1:
                for i in range(m):
                    acc[off + i] += g[i]
            else:
                for i in range(m):
                    acc[off + i * st] += g[i]
            c += m
        if not walk_next(&w, bc):
            return


cdef void _sum_rows(bint for_x, const real* d, double* acc, const Bcast* bc) noexcept nogil:
    """add/sub's reduced gradient: Out@GRAD itself summed into ``acc`` (sign left to the
    caller), straight from Out@GRAD: a row sum into one place (stride 0), or rows added
    element by element (stride 1: a bias's column sums), both vectorized."""
    cdef Walk w
    cdef int nd = bc.nd
    cdef Py_ssize_t n = bc.dims[nd - 1]
    cdef Py_ssize_t st = bc.sx[nd - 1] if for_x else bc.sy[nd - 1]
    cdef Py_ssize_t i, off, m = n - n % 4
    cdef const real* row
    cdef double s0, s1, s2, s3
    walk_start(&w, bc)
    while True:
        row = d + w.o
        off = w.ox if for_x else w.oy
        if st == 0:
            s0 = s1 = s2 = s3 = 0.0
            for i in range(0, m, 4):
                s0 += row[i]
                s1 += row[i + 1]
                s2 += row[i + 2]
                s3 += row[i + 3]
            for i in range(m, n):
                s0 += row[i]
            acc[off] += (s0 + s1) + (s2 + s3)
        elif st == 1:
            for i in range(n):
                acc[off + i] += row[i]
        else:
            for i in range(n):
                acc[off + i * st] += row[i]
        if not walk_next(&w, bc):
            return


cdef class ElementwiseGrad:
    """<op>_grad: (X, Y, Out@GRAD) -> (X@GRAD, Y@GRAD); elementwise_div_grad takes
    (X, Y, Out, Out@GRAD). Gradients nobody wants are not computed (None). add and sub pass
    Out@GRAD through (no copy when allowed) to an operand that was not broadcast."""
    cdef int code, axis
    cdef str name
    cdef bint want_x, want_y, alias
    cdef object _dx, _dy   # the last gradients this kernel allocated (recycled)

    def __init__(self, int code, str name, dict attrs, info=None):
        self.code, self.name = code, name
        self.axis = attrs.get("axis", -1)
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_y = info is None or info.wants("Y@GRAD")
        # A gradient may be Out@GRAD itself (no copy) unless a variable involved is
        # persistable (docs/kernels.md); called directly, without an info, it is copied.
        self.alias = info is not None and info.may_alias("Out@GRAD", "X@GRAD") and \
            info.may_alias("Out@GRAD", "Y@GRAD")

    def __call__(self, x, y, third, fourth=None):
        cdef bint reads_out = self.code == DIV
        if reads_out and fourth is None:
            raise ValueError(f"{self.name}: takes X, Y, Out and Out@GRAD")
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef cnp.ndarray g = contiguous(fourth if reads_out else third)
        cdef cnp.ndarray o = contiguous(third) if reads_out else g
        cdef int t = typenum(a)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"{self.name}: X has dtype {dtype_name(a)}, expected float32 or "
                            f"float64")
        if typenum(b) != t or typenum(g) != t or typenum(o) != t:
            raise TypeError(f"{self.name}: X, Y" + (", Out" if reads_out else "") +
                            f" and Out@GRAD must share one dtype, got {dtype_name(a)}, "
                            f"{dtype_name(b)}" + (f", {dtype_name(o)}" if reads_out else "")
                            + f" and {dtype_name(g)}")
        cdef Bcast bc
        broadcast(a, b, self.axis, &bc, self.name)
        cdef int k
        out_shape = tuple([bc.out_shape[k] for k in range(bc.out_nd)])
        if shape_of(g) != out_shape:
            raise ValueError(f"{self.name}: Out@GRAD has shape {list(shape_of(g))}, expected "
                             f"the broadcast shape {list(out_shape)} of X{list(shape_of(a))} "
                             f"and Y{list(shape_of(b))} (axis={self.axis})")
        if reads_out and shape_of(o) != out_shape:
            raise ValueError(f"{self.name}: Out has shape {list(shape_of(o))}, expected "
                             f"{list(out_shape)}")
        dx = self._one(True, t, a, b, o, g, &bc) if self.want_x else None
        dy = self._one(False, t, a, b, o, g, &bc) if self.want_y else None
        return (dx, dy)

    cdef object _one(self, bint for_x, int t, cnp.ndarray a, cnp.ndarray b, cnp.ndarray o,
                     cnp.ndarray g, const Bcast* bc):
        cdef cnp.ndarray target = a if for_x else b
        cdef Py_ssize_t size = cnp.PyArray_SIZE(target), i
        cdef bint reduced = size != bc.size
        if not reduced and (self.code == ADD or (self.code == SUB and for_x)):
            # Out@GRAD itself, in the operand's shape (a view), or a copy when aliasing is
            # not allowed.
            res = g if self.alias else g.copy()
            return res if same_shape(g, target) else res.reshape(shape_of(target))
        # (pointers straight from the fields: a temporary reference would defeat the check)
        cdef PyObject* prev = <PyObject*>self._dx if for_x else <PyObject*>self._dy
        cdef cnp.ndarray res_arr = recycled(prev, shape_of(target), t)
        if for_x:
            self._dx = res_arr
        else:
            self._dy = res_arr
        cdef cnp.ndarray acc_arr = None
        cdef double* acc = NULL
        cdef cnp.npy_intp n1 = size
        if reduced:
            if t == cnp.NPY_FLOAT64:
                res_arr.fill(0)
                acc = <double*>cnp.PyArray_DATA(res_arr)
            else:
                acc_arr = cnp.PyArray_ZEROS(1, &n1, cnp.NPY_FLOAT64, 0)
                acc = <double*>cnp.PyArray_DATA(acc_arr)
        cdef bint summed = reduced and (self.code == ADD or self.code == SUB)
        if bc.size and summed:
            with nogil:
                if t == cnp.NPY_FLOAT32:
                    _sum_rows(for_x, <float*>cnp.PyArray_DATA(g), acc, bc)
                else:
                    _sum_rows(for_x, <double*>cnp.PyArray_DATA(g), acc, bc)
            if self.code == SUB and not for_x:
                with nogil:
                    for i in range(size):
                        acc[i] = -acc[i]
        elif bc.size:
            if t == cnp.NPY_FLOAT32:
                with nogil:
                    _grad_walk(self.code, for_x, <float*>cnp.PyArray_DATA(a),
                               <float*>cnp.PyArray_DATA(b), <float*>cnp.PyArray_DATA(o),
                               <float*>cnp.PyArray_DATA(g),
                               NULL if reduced else <float*>cnp.PyArray_DATA(res_arr), acc,
                               bc)
            else:
                with nogil:
                    _grad_walk(self.code, for_x, <double*>cnp.PyArray_DATA(a),
                               <double*>cnp.PyArray_DATA(b), <double*>cnp.PyArray_DATA(o),
                               <double*>cnp.PyArray_DATA(g),
                               NULL if reduced else <double*>cnp.PyArray_DATA(res_arr), acc,
                               bc)
        cdef float* pf
        if acc_arr is not None:
            pf = <float*>cnp.PyArray_DATA(res_arr)
            with nogil:
                for i in range(size):
                    pf[i] = <float>acc[i]
        return res_arr


def _grad_maker(int code, str name):
    def make(dict attrs, info=None):
        return ElementwiseGrad(code, name, attrs, info)
    make.__name__ = name
    return make


KERNELS = [
    ("elementwise_add", _maker(ADD, "elementwise_add"), NUMBERS),
    ("elementwise_sub", _maker(SUB, "elementwise_sub"), NUMBERS),
    ("elementwise_mul", _maker(MUL, "elementwise_mul"), NUMBERS),
    ("elementwise_div", _maker(DIV, "elementwise_div"), NUMBERS),
    ("elementwise_max", _maker(MAX, "elementwise_max"), NUMBERS),
    ("elementwise_min", _maker(MIN, "elementwise_min"), NUMBERS),
    ("elementwise_pow", _maker(POW, "elementwise_pow"), FLOATS),
] + [(name + "_grad", _grad_maker(code, name + "_grad"), FLOATS) for code, name in (
    (ADD, "elementwise_add"), (SUB, "elementwise_sub"), (MUL, "elementwise_mul"),
    (DIV, "elementwise_div"), (MAX, "elementwise_max"), (MIN, "elementwise_min"),
    (POW, "elementwise_pow"))]
