# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""layer_norm and its gradient: one pass of C per row for the statistics, one for the output
(the gradient: one for the row's two sums, one for X@GRAD), in X's precision with the sums in
double. float32 runs the vectorized row loops of _rows.h (their partial sums are double too)."""
cimport numpy as cnp
from libc.math cimport sqrt
from headrace.kernels.common cimport real

cdef extern from "_rows.h" nogil:
    void hr_layer_norm_f32(const float* x, const float* s, const float* b, float* y,
                           float* mean, float* var, Py_ssize_t rows, Py_ssize_t n, double eps)
    void hr_layer_norm_grad_f32(const float* x, const float* s, const float* mean,
                                const float* var, const float* dy, float* dx, double* ds,
                                double* db, Py_ssize_t rows, Py_ssize_t n, double eps)

import numpy as np

from ..host._common import wanted
from ..host.layer_norm import GRADS, split_rows

cnp.import_array()

DTYPES = ("float32", "float64")


def _rows(x, int axis, op):
    a = np.ascontiguousarray(x)
    left, right = split_rows(a.shape, axis, op)
    return a, left, right


def _param(p, right, dtype, op, slot):
    if p is None:
        return None
    a = np.ascontiguousarray(p, dtype=dtype).reshape(-1)
    if a.size != right:
        raise ValueError(f"{op}: {slot} holds {a.size} values, a row of X {right}")
    return a


cdef void _forward(const real* x, const real* s, const real* b, real* y, real* mean,
                   real* var, Py_ssize_t left, Py_ssize_t right, double eps) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef double m, v, d, inv
    cdef const real* row
    for i in range(left):
        row = x + i * right
        m = 0
        for j in range(right):
            m += row[j]
        m /= right
        v = 0
        for j in range(right):
            d = row[j] - m
            v += d * d
        v /= right
        mean[i], var[i] = <real>m, <real>v
        inv = 1 / sqrt(v + eps)
        for j in range(right):
            d = (row[j] - m) * inv
            if s != NULL:
                d = d * s[j]
            if b != NULL:
                d = d + b[j]
            y[i * right + j] = <real>d


cdef void _backward(const real* x, const real* s, const real* mean, const real* var,
                    const real* dy, real* dx, double* ds, double* db, Py_ssize_t left,
                    Py_ssize_t right, double eps) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef double inv, xhat, g, sum_g, sum_gx
    for i in range(left):
        inv = 1 / sqrt(var[i] + eps)
        sum_g = sum_gx = 0
        for j in range(right):
            xhat = (x[i * right + j] - mean[i]) * inv
            g = dy[i * right + j]
            if ds != NULL:
                ds[j] += g * xhat
            if db != NULL:
                db[j] += g
            if s != NULL:
                g = g * s[j]
            sum_g += g
            sum_gx += g * xhat
        if dx == NULL:
            continue
        for j in range(right):
            xhat = (x[i * right + j] - mean[i]) * inv
            g = dy[i * right + j] * (s[j] if s != NULL else 1)
            dx[i * right + j] = <real>(inv * (g - sum_g / right - xhat * sum_gx / right))


cdef class LayerNorm:
    cdef double eps
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.eps, self.axis = attrs["epsilon"], attrs["begin_norm_axis"]

    def __call__(self, x, scale, bias):
        a, left, right = _rows(x, self.axis, "layer_norm")
        s, b = (_param(p, right, a.dtype, "layer_norm", slot)
                for p, slot in ((scale, "Scale"), (bias, "Bias")))
        y = np.empty_like(a)
        mean = np.empty(left, a.dtype)
        var = np.empty(left, a.dtype)
        if a.size:
            if a.dtype == np.float32:
                _run[float](a.reshape(-1), s, b, y.reshape(-1), mean, var, left, right,
                            self.eps)
            elif a.dtype == np.float64:
                _run[double](a.reshape(-1), s, b, y.reshape(-1), mean, var, left, right,
                             self.eps)
            else:
                raise TypeError(f"layer_norm: X has dtype {a.dtype}, expected float32 or "
                                f"float64")
        return y, mean, var


cdef _run(real[::1] x, s, b, real[::1] y, real[::1] mean, real[::1] var, Py_ssize_t left,
          Py_ssize_t right, double eps):
    cdef real[::1] sv, bv
    cdef const real* ps = NULL
    cdef const real* pb = NULL
    if s is not None:
        sv = s
        ps = &sv[0]
    if b is not None:
        bv = b
        pb = &bv[0]
    with nogil:
        if real is float:
            hr_layer_norm_f32(&x[0], ps, pb, &y[0], &mean[0], &var[0], left, right, eps)
        else:
            _forward(&x[0], ps, pb, &y[0], &mean[0], &var[0], left, right, eps)


cdef class LayerNormGrad:
    cdef double eps
    cdef int axis
    cdef bint want_x, want_s, want_b

    def __init__(self, dict attrs, info=None):
        self.eps, self.axis = attrs["epsilon"], attrs["begin_norm_axis"]
        self.want_x, self.want_s, self.want_b = wanted(info, GRADS)

    def __call__(self, x, scale, bias, mean, variance, dy):
        op = "layer_norm_grad"
        a, left, right = _rows(x, self.axis, op)
        s = _param(scale, right, a.dtype, op, "Scale")
        _param(bias, right, a.dtype, op, "Bias")  # checked: its gradient takes its shape
        m = np.ascontiguousarray(mean, a.dtype).reshape(-1)
        v = np.ascontiguousarray(variance, a.dtype).reshape(-1)
        g = np.ascontiguousarray(dy, a.dtype)
        if m.size != left or v.size != left or g.shape != a.shape:
            raise ValueError(f"{op}: Mean/Variance must hold {left} rows' statistics and "
                             f"Y@GRAD X's shape {list(a.shape)}; found {m.size}, {v.size}, "
                             f"{list(g.shape)}")
        dx = np.empty_like(a) if self.want_x else None
        ds = np.zeros(right) if (self.want_s and scale is not None) else None
        db = np.zeros(right) if (self.want_b and bias is not None) else None
        if a.size:
            if a.dtype == np.float32:
                _run_grad[float](a.reshape(-1), s, m, v, g.reshape(-1), dx, ds, db, left, right,
                                 self.eps)
            else:
                _run_grad[double](a.reshape(-1), s, m, v, g.reshape(-1), dx, ds, db, left, right,
                                  self.eps)
        shape = np.shape(scale) if scale is not None else None
        return (dx,
                None if ds is None else ds.astype(a.dtype).reshape(shape),
                None if db is None else db.astype(a.dtype).reshape(np.shape(bias)))


cdef _run_grad(real[::1] x, s, real[::1] mean, real[::1] var, real[::1] dy, dx, ds, db,
               Py_ssize_t left, Py_ssize_t right, double eps):
    cdef real[::1] sv, dxv
    cdef double[::1] dsv, dbv
    cdef const real* ps = NULL
    cdef real* pdx = NULL
    cdef double* pds = NULL
    cdef double* pdb = NULL
    if s is not None:
        sv = s
        ps = &sv[0]
    if dx is not None:
        dxv = dx.reshape(-1)
        pdx = &dxv[0]
    if ds is not None:
        dsv = ds
        pds = &dsv[0]
    if db is not None:
        dbv = db
        pdb = &dbv[0]
    with nogil:
        if real is float:
            hr_layer_norm_grad_f32(&x[0], ps, &mean[0], &var[0], &dy[0], pdx, pds, pdb, left,
                                   right, eps)
        else:
            _backward(&x[0], ps, &mean[0], &var[0], &dy[0], pdx, pds, pdb, left, right, eps)


KERNELS = [("layer_norm", LayerNorm, DTYPES), ("layer_norm_grad", LayerNormGrad, DTYPES)]
