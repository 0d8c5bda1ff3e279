"""dropout/dropout_grad on CUDA: train (random uint8 Mask) and test modes, both
dropout_implementation modes, as the CPU kernel.

Randomness: uniform numbers in X's dtype from numba.cuda.random xoroshiro128p states on the
device (headrace.kernels.cuda_launch); an element is kept when u >= dropout_prob (p = 0 keeps
all, p = 1 drops all). Which states, as the CPU kernel picks its generator:
- the Seed input, or fix_seed: states seeded on the device at every call (from the Seed
  tensor's value, read by the seeding kernel, or the fixed seed), so every run drops the same
  elements (what fix_seed promises);
- else info.seed (the op's seed, or one derived from the program's random_seed): states made
  with the kernel and advanced on the device run after run: a reproducible sequence of
  different masks, as training needs;
- else unseeded states (nondeterministic).
The masks differ from the CPU kernel's NumPy draws (another generator); their law is the same.

dropout_grad(Out@GRAD, Mask) -> X@GRAD: training X@GRAD = Out@GRAD where Mask is set (times
1/(1-p) for upscale_in_train), 0 elsewhere; is_test: Out@GRAD * (1 - p) (downgrade_in_infer) or
Out@GRAD itself (upscale_in_train). One thread per element throughout.
"""
import numpy as np
from numba import cuda
from numba.cuda.random import xoroshiro128p_dtype

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_draws import uniform
from headrace.kernels.cuda_launch import (device_copy, device_empty, device_fill, empty_like,
                                          flat, float_input, launch, reseed_states, rng_count,
                                          rng_grid, rng_states)

from ..host.dropout import DropoutAttrs, stream_seed

DTYPES = ("float32", "float64")


@cuda.jit
def _train(states, x, out, mask, p, scale, double, total):
    t = cuda.grid(1)
    if t < total:
        for i in range(t, out.size, total):      # a grid-stride loop: state t draws them all
            if uniform(states, t, double) >= p:
                mask[i] = 1
                out[i] = x[i] * scale
            else:
                mask[i] = 0
                out[i] = 0


@cuda.jit
def _scaled(x, out, factor):
    # The test-mode scaling in float64, then X's type (the CPU kernel's (a * (1 - p)).astype).
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * factor


@cuda.jit
def _masked(mask, dy, dx, scale):
    i = cuda.grid(1)
    if i < dx.size:
        dx[i] = dy[i] * scale if mask[i] else 0


def _test_mode(a, attrs):
    """The test-mode result, a plain scaling: ``a`` itself (a copy) for upscale_in_train, else
    ``a`` * (1 - p) (in float64, then ``a``'s type, as the CPU kernel's)."""
    if attrs.upscale:
        return device_copy(a)
    out = empty_like(a)
    launch(_scaled, out.size, flat(a), flat(out), 1.0 - attrs.p)
    return out


class Dropout:
    def __init__(self, attrs, info=None):
        a = DropoutAttrs(attrs, "dropout")
        self.p, self.scale, self.is_test, self.upscale = a.p, a.scale, a.is_test, a.upscale
        self.fixed, self.seed = stream_seed(attrs, info)
        self.states = self.scratch = self.fixed_seed = None

    def _states(self, seed, n):
        """The states of this call (see the module docstring); made at the first call."""
        if seed is None and not self.fixed:
            if self.states is None:
                self.states = rng_states(self.seed, n)
            return self.states
        if self.scratch is None:
            self.scratch = cuda.device_array(rng_count(n), dtype=xoroshiro128p_dtype,
                                             stream=current_stream())
        if seed is None:
            if self.fixed_seed is None:   # the fixed seed, on the device once
                self.fixed_seed = cuda.to_device(np.array([self.seed], np.uint64),
                                                 stream=current_stream())
            seed = self.fixed_seed
        reseed_states(self.scratch, seed)
        return self.scratch

    def __call__(self, x, seed=None):
        a = float_input(x, "dropout", "X")
        if self.is_test:
            mask = device_fill(device_empty(a.shape, np.uint8), np.uint8(1))
            return (_test_mode(a, self), mask)
        if seed is not None and (seed.size != 1 or np.dtype(seed.dtype).kind not in "iu"):
            raise ValueError(f"dropout: Seed must hold one integer, got {seed.dtype} "
                             f"shape {list(seed.shape)}")
        out = empty_like(a)
        mask = device_empty(a.shape, np.uint8)
        if out.size:
            states = self._states(None if seed is None else seed.reshape(1), out.size)
            t = np.dtype(a.dtype).type
            blocks, threads, total = rng_grid(out.size, states)
            _train[blocks, threads, current_stream()](states, flat(a), flat(out), flat(mask),
                                                      t(self.p), t(self.scale),
                                                      t is np.float64, total)
        return (out, mask)


class DropoutGrad:
    """dropout_grad(Out@GRAD, Mask) -> (X@GRAD,)."""

    def __init__(self, attrs, info=None):
        a = DropoutAttrs(attrs, "dropout_grad")
        self.p, self.scale, self.is_test, self.upscale = a.p, a.scale, a.is_test, a.upscale
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, dout, mask):
        name = "dropout_grad"
        if dout is None:
            raise TypeError(f"{name}: input Out@GRAD is missing")
        g = float_input(dout, name, "Out@GRAD")
        if str(mask.dtype) != "uint8":
            raise TypeError(f"{name}: Mask has dtype {mask.dtype}, expected uint8")
        if tuple(mask.shape) != tuple(g.shape):
            raise ValueError(f"{name}: Mask{list(mask.shape)} must have the shape of Out@GRAD "
                             f"{list(g.shape)}")
        if not self.want:
            return (None,)
        if self.is_test:
            return (_test_mode(g, self),)
        dx = empty_like(g)
        launch(_masked, dx.size, flat(mask), flat(g), flat(dx),
               np.dtype(g.dtype).type(self.scale))
        return (dx,)


KERNELS = [("dropout", Dropout, DTYPES), ("dropout_grad", DropoutGrad, DTYPES)]
