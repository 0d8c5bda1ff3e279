"""Random draws for plugins' Numba CUDA kernels, from the xoroshiro128p states that
cuda_launch's rng_states / reseed_states make (a kernel's thread t draws from state t), in the
precision of the tensor being filled. Kept beside cuda_launch as its own module."""
from numba import cuda
from numba.cuda.random import xoroshiro128p_uniform_float32, xoroshiro128p_uniform_float64

__all__ = ["uniform"]


@cuda.jit(device=True)
def uniform(states, t, double):
    """A uniform draw in [0, 1) from state ``t``: a float64 draw when ``double``, else a
    float32 one (exactly representable as the float64 it is returned as)."""
    if double:
        return xoroshiro128p_uniform_float64(states, t)
    return xoroshiro128p_uniform_float32(states, t)
