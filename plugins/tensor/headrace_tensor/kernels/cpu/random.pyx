# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""uniform_random and gaussian_random.

Reproducibility: the maker creates one NumPy Generator from ``info.seed`` (the op's seed
attribute, else a seed derived from the program's random_seed and the op's position, else
None = fresh OS entropy) and keeps it in the kernel. Successive runs therefore draw successive
samples (a training loop gets new noise every step), and two executors preparing the same
seeded program draw the same sequence.

The Generator draws in the output's float type (float16 via float32, which NumPy's generator
lacks); a typed loop then maps the draws to [min, max) or N(mean, std^2) without the GIL.
"""
cimport numpy as cnp
from headrace.kernels.common cimport real
from ._common cimport int_values, ints_of_list

import numpy as np

from ..host.random import (FLOATS, check_diagonal, float_dtype, gaussian_attrs,
                           largest_below, out_shape, uniform_attrs)

cnp.import_array()


def _ints(t, op, slot):
    return int_values(t, op, slot)


def _ints_of_list(ts, op, slot):
    return ints_of_list(ts, op, slot)


cdef void _affine(real* x, Py_ssize_t n, real scale, real shift) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        x[i] = shift + scale * x[i]


cdef void _uniform(real* x, Py_ssize_t n, real lo, real width, real below) noexcept nogil:
    """x in [0, 1) -> lo + width * x. Rounding can land exactly on max in the output type, so
    anything above ``below`` (the largest value of the type under max) is pulled back to it:
    the range stays [min, max)."""
    cdef Py_ssize_t i
    cdef real v
    for i in range(n):
        v = lo + width * x[i]
        if v > below:
            v = below
        x[i] = v


cdef class _Random:
    """What both random kernels share: output dtype, shape resolution, the Generator."""
    cdef object dtype, gen
    cdef list shape
    cdef str op

    def __init__(self, str op, dict attrs, info):
        self.op = op
        self.dtype = float_dtype(attrs, op, "CPU")
        self.shape = [int(d) for d in attrs["shape"]]
        seed = getattr(info, "seed", None) if info is not None else None
        self.gen = np.random.default_rng(None if seed is None else
                                         int(seed) & 0xFFFFFFFFFFFFFFFF)

    cdef tuple out_shape(self, object shape_tensor, object shape_list):
        return out_shape(self.op, self.shape, shape_tensor, shape_list, _ints, _ints_of_list)

    cdef cnp.ndarray draw(self, tuple shape, bint normal):
        """Standard uniform [0, 1) or standard normal draws, in float32 for float32/float16
        outputs and float64 for float64 (the type the affine loop then works in)."""
        work = np.float64 if self.dtype == np.float64 else np.float32
        if normal:
            return self.gen.standard_normal(shape, dtype=work)
        return self.gen.random(shape, dtype=work)


cdef class UniformRandom(_Random):
    """Out = U[min, max) samples; then diag_num elements at flat index i * (diag_step + 1)
    are set to diag_val."""
    cdef double lo, hi, diag_val
    cdef Py_ssize_t diag_num, diag_step

    def __init__(self, dict attrs, info=None):
        super().__init__("uniform_random", attrs, info)
        (self.lo, self.hi, self.diag_num, self.diag_step,
         self.diag_val) = uniform_attrs(attrs)

    def __call__(self, shape_tensor=None, shape_list=None):
        cdef tuple shape = self.out_shape(shape_tensor, shape_list)
        cdef Py_ssize_t n = 1, i
        for d in shape:
            n *= <Py_ssize_t>d
        check_diagonal(self.diag_num, self.diag_step, n)
        cdef cnp.ndarray u = self.draw(shape, False)
        cdef double lo = self.lo, hi = self.hi, below_d
        cdef float below_f
        if cnp.PyArray_TYPE(u) == cnp.NPY_FLOAT64:
            below_d = largest_below(self.dtype, hi)
            with nogil:
                _uniform(<double*>cnp.PyArray_DATA(u), n, lo, hi - lo, below_d)
        else:
            below_f = largest_below(np.dtype(np.float32), hi)
            with nogil:
                _uniform(<float*>cnp.PyArray_DATA(u), n, <float>lo, <float>(hi - lo), below_f)
        out = u if self.dtype == u.dtype else u.astype(self.dtype)
        if self.dtype == np.float16:
            # Rounding float32 draws to float16 may reach max again: pull those back too.
            below = largest_below(self.dtype, hi)
            flat = out.reshape(-1)
            flat[flat > below] = below
        if self.diag_num > 0:
            flat = out.reshape(-1)
            for i in range(self.diag_num):
                flat[i * (self.diag_step + 1)] = self.diag_val
        return (out,)


cdef class GaussianRandom(_Random):
    """Out = N(mean, std^2) samples."""
    cdef double mean, std

    def __init__(self, dict attrs, info=None):
        super().__init__("gaussian_random", attrs, info)
        self.mean, self.std = gaussian_attrs(attrs)

    def __call__(self, shape_tensor=None, shape_list=None):
        cdef cnp.ndarray z = self.draw(self.out_shape(shape_tensor, shape_list), True)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(z)
        if cnp.PyArray_TYPE(z) == cnp.NPY_FLOAT64:
            with nogil:
                _affine(<double*>cnp.PyArray_DATA(z), n, self.std, self.mean)
        else:
            with nogil:
                _affine(<float*>cnp.PyArray_DATA(z), n, <float>self.std, <float>self.mean)
        return (z if self.dtype == z.dtype else z.astype(self.dtype),)


KERNELS = [
    ("uniform_random", UniformRandom, None),
    ("gaussian_random", GaussianRandom, None),
]
