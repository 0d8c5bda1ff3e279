# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""dropout: train (random uint8 Mask) and test modes, both dropout_implementation modes.

Randomness: uniform numbers in X's dtype from a NumPy Generator, ``u = gen.random(X.size)``;
an element is kept when u >= dropout_prob (so p = 0 keeps all, p = 1 drops all).
Which generator:
- the Seed input, or fix_seed: a fresh generator from that seed on every run, so every run
  drops the same elements (what fix_seed promises);
- else info.seed (the op's seed attribute, or one derived from the program's random_seed):
  one generator made with the kernel, advancing run after run: a reproducible sequence of
  different masks, as training needs;
- else an unseeded generator (nondeterministic).

dropout_grad(Out@GRAD, Mask) -> X@GRAD: training X@GRAD = Out@GRAD where Mask is set (times
1/(1-p) for upscale_in_train), 0 elsewhere; is_test: Out@GRAD * (1 - p) (downgrade_in_infer) or
Out@GRAD itself (upscale_in_train), as the test-mode forward is a plain scaling.
"""
cimport numpy as cnp
from headrace.kernels.common cimport contiguous, empty_like, real, shape_of
from ._common cimport expect_shape, float_array

import numpy as np

from ..host.dropout import SEED_MASK, DropoutAttrs, stream_seed

cnp.import_array()

DTYPES = ("float32", "float64")


cdef void _train(const real* x, const real* u, real* out, unsigned char* mask, Py_ssize_t n,
                 real p, real scale) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if u[i] >= p:
            mask[i] = 1
            out[i] = x[i] * scale
        else:
            mask[i] = 0
            out[i] = 0


cdef class Dropout:
    cdef double p, scale
    cdef bint is_test, upscale, fixed
    cdef object seed, gen

    def __init__(self, dict attrs, info=None):
        a = DropoutAttrs(attrs, "dropout")
        self.p, self.scale, self.is_test, self.upscale = a.p, a.scale, a.is_test, a.upscale
        self.fixed, self.seed = stream_seed(attrs, info)
        self.gen = np.random.default_rng(self.seed)

    def __call__(self, x, seed=None):
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = cnp.PyArray_TYPE(a)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"dropout: X has dtype {a.dtype}, expected float32 or float64")
        cdef cnp.ndarray out, mask
        if self.is_test:
            mask = np.ones(shape_of(a), np.uint8)
            if self.upscale:
                return (a.copy(), mask)
            return ((a * (1.0 - self.p)).astype(a.dtype), mask)
        if seed is not None:
            s = np.asarray(seed)
            if s.size != 1 or s.dtype.kind not in "iu":
                raise ValueError(f"dropout: Seed must hold one integer, got {s.dtype} "
                                 f"shape {list(s.shape)}")
            gen = np.random.default_rng(int(s.reshape(-1)[0]) & SEED_MASK)
        elif self.fixed:
            gen = np.random.default_rng(self.seed)
        else:
            gen = self.gen
        cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
        cdef cnp.ndarray u = gen.random(n, dtype=a.dtype)
        out = empty_like(a)
        mask = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a), cnp.NPY_UINT8, 0)
        cdef double scale = self.scale
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _train(<const float*>cnp.PyArray_DATA(a), <const float*>cnp.PyArray_DATA(u),
                       <float*>cnp.PyArray_DATA(out), <unsigned char*>cnp.PyArray_DATA(mask), n,
                       <float>self.p, <float>scale)
        else:
            with nogil:
                _train(<const double*>cnp.PyArray_DATA(a), <const double*>cnp.PyArray_DATA(u),
                       <double*>cnp.PyArray_DATA(out), <unsigned char*>cnp.PyArray_DATA(mask),
                       n, self.p, scale)
        return (out, mask)


cdef void _grad(const unsigned char* mask, const real* dy, real* dx, Py_ssize_t n,
                real scale) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dx[i] = dy[i] * scale if mask[i] else 0


cdef class DropoutGrad:
    """dropout_grad(Out@GRAD, Mask) -> (X@GRAD,)."""
    cdef double p, scale
    cdef bint is_test, upscale, want

    def __init__(self, dict attrs, info=None):
        a = DropoutAttrs(attrs, "dropout_grad")
        self.p, self.scale, self.is_test, self.upscale = a.p, a.scale, a.is_test, a.upscale
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, dout, mask):
        name = "dropout_grad"
        cdef cnp.ndarray g = float_array(dout, name, "Out@GRAD")
        cdef cnp.ndarray m = contiguous(mask)
        if cnp.PyArray_TYPE(m) != cnp.NPY_UINT8:
            raise TypeError(f"{name}: Mask has dtype {m.dtype}, expected uint8")
        expect_shape(m, shape_of(g), name, "Mask", "the shape of Out@GRAD")
        if not self.want:
            return (None,)
        if self.is_test:
            if self.upscale:
                return (g.copy(),)
            return ((g * (1.0 - self.p)).astype(g.dtype),)
        cdef cnp.ndarray dx = empty_like(g)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(g)
        cdef double scale = self.scale
        if cnp.PyArray_TYPE(g) == cnp.NPY_FLOAT32:
            with nogil:
                _grad(<const unsigned char*>cnp.PyArray_DATA(m), <const float*>cnp.PyArray_DATA(g),
                      <float*>cnp.PyArray_DATA(dx), n, <float>scale)
        else:
            with nogil:
                _grad(<const unsigned char*>cnp.PyArray_DATA(m),
                      <const double*>cnp.PyArray_DATA(g), <double*>cnp.PyArray_DATA(dx), n,
                      scale)
        return (dx,)


KERNELS = [("dropout", Dropout, DTYPES), ("dropout_grad", DropoutGrad, DTYPES)]
