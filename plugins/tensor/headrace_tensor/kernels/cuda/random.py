"""uniform_random and gaussian_random on CUDA.

Reproducibility, as the CPU kernel decides it: the maker makes the device's random states from
``info.seed`` (the op's seed attribute, else one derived from the program's random_seed and the
op's position, else None = fresh entropy) once, Numba's xoroshiro128p generators
(headrace.kernels.cuda_launch.rng_states), and every call advances them on the device: a
training loop gets new noise every step, and two executors preparing the same seeded program
draw the same sequence. The numbers differ from the CPU kernel's NumPy draws (another
generator); their distribution is the same.

Each thread of a launch draws from its own state (a grid-stride loop over the output), in
float32 for float16/float32 outputs and float64 for float64, and maps the draws to [min, max)
(pulled back under max where rounding reaches it, as on the CPU) or N(mean, std^2). A shape
given by ShapeTensor/ShapeTensorList is read on the host (the output must be allocated).
"""
import numpy as np
from numba import cuda
from numba.cuda.random import (xoroshiro128p_normal_float32, xoroshiro128p_normal_float64,
                               xoroshiro128p_uniform_float32, xoroshiro128p_uniform_float64)

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import device_empty, flat, launch, rng_grid, rng_states

from ..host.random import (check_diagonal, float_dtype, gaussian_attrs, largest_below,
                           out_shape, uniform_attrs)
from ._common import host_ints, ints_of_list


@cuda.jit
def _uniform(states, out, lo, width, below, below_out, double, total):
    t = cuda.grid(1)
    if t < total:
        i = t
        while i < out.size:
            if double:
                v = lo + width * xoroshiro128p_uniform_float64(states, t)
            else:
                v = lo + width * xoroshiro128p_uniform_float32(states, t)
            if v > below:
                v = below
            out[i] = v
            if out[i] > below_out:     # float16: rounding may reach max again
                out[i] = below_out
            i += total


@cuda.jit
def _gaussian(states, out, mean, std, double, total):
    t = cuda.grid(1)
    if t < total:
        i = t
        while i < out.size:
            if double:
                out[i] = mean + std * xoroshiro128p_normal_float64(states, t)
            else:
                out[i] = mean + std * xoroshiro128p_normal_float32(states, t)
            i += total


@cuda.jit
def _diag(out, step, val):
    i = cuda.grid(1)
    if i * (step + 1) < out.size:
        out[i * (step + 1)] = val


class _Random:
    """What both random kernels share: output dtype, shape resolution, the device states."""

    def __init__(self, op, attrs, info):
        self.op = op
        self.dtype = float_dtype(attrs, op, "CUDA")
        self.shape = [int(d) for d in attrs["shape"]]
        self.seed = getattr(info, "seed", None) if info is not None else None
        self.states = None
        # float32 math for float16/float32 outputs, float64 for float64 (as the CPU draws).
        self.work = np.dtype(np.float64 if self.dtype == np.float64 else np.float32)

    def out_shape(self, shape_tensor, shape_list):
        return out_shape(self.op, self.shape, shape_tensor, shape_list, host_ints,
                         ints_of_list)

    def generators(self, n):
        # Made at the first call, on the running executor's stream, then kept and advanced.
        if self.states is None:
            self.states = rng_states(self.seed, n)
        return self.states


class UniformRandom(_Random):
    """Out = U[min, max) samples; then diag_num elements at flat index i * (diag_step + 1)
    are set to diag_val."""

    def __init__(self, attrs, info=None):
        super().__init__("uniform_random", attrs, info)
        (self.lo, self.hi, self.diag_num, self.diag_step,
         self.diag_val) = uniform_attrs(attrs)

    def __call__(self, shape_tensor=None, shape_list=None):
        shape = self.out_shape(shape_tensor, shape_list)
        n = int(np.prod(shape, dtype=np.int64))
        check_diagonal(self.diag_num, self.diag_step, n)
        out = device_empty(shape, self.dtype)
        if n:
            w = self.work.type
            states = self.generators(n)
            blocks, threads, total = rng_grid(n, states)
            _uniform[blocks, threads, current_stream()](
                states, flat(out), w(self.lo), w(self.hi - self.lo),
                largest_below(self.work, self.hi), largest_below(self.dtype, self.hi),
                self.work == np.float64, total)
        if self.diag_num > 0:
            launch(_diag, self.diag_num, flat(out), self.diag_step,
                   self.dtype.type(self.diag_val))
        return (out,)


class GaussianRandom(_Random):
    """Out = N(mean, std^2) samples."""

    def __init__(self, attrs, info=None):
        super().__init__("gaussian_random", attrs, info)
        self.mean, self.std = gaussian_attrs(attrs)

    def __call__(self, shape_tensor=None, shape_list=None):
        out = device_empty(self.out_shape(shape_tensor, shape_list), self.dtype)
        if out.size:
            w = self.work.type
            states = self.generators(out.size)
            blocks, threads, total = rng_grid(out.size, states)
            _gaussian[blocks, threads, current_stream()](
                states, flat(out), w(self.mean), w(self.std),
                self.work == np.float64, total)
        return (out,)


KERNELS = [
    ("uniform_random", UniformRandom, None),
    ("gaussian_random", GaussianRandom, None),
]
