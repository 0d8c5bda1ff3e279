"""Launch helpers shared by every plugin's Numba CUDA kernels (``kernels/cuda/<module>.py``).

Imported only by CUDA kernel modules, which need numba anyway. One place for launch geometry,
the shared-memory tree reduction, the axis split the CPU kernels use, the input checks that
make a CUDA kernel refuse what its CPU twin refuses, and the one-element device flag through
which a kernel reports a bad index (read at the end of the executor's run, only to raise).
"""
import numpy as np
from numba import cuda

from ..devices.cuda import check_flag as device_check_flag
from ..devices.cuda import SIMULATOR, current_stream, new_flag
from ..errors import OpError

__all__ = ["THREADS", "ROW_THREADS", "grid", "launch", "tree_reduce", "TREE_SUM", "TREE_MAX",
           "TREE_MIN", "TREE_PROD", "TREE_NANMAX", "TREE_NANMIN", "split_axis", "flat",
           "empty_like", "device_empty", "float_input", "same_shape_dtype", "new_flag",
           "check_flag", "device_copy", "copy_into", "device_fill",
           "RNG_STATES", "rng_count", "rng_states", "rng_grid", "reseed_states"]

# Threads of an elementwise block.
THREADS = 256
# Threads of a block that reduces one row (a power of two for the tree reduction). Small on
# purpose: rows of a few hundred elements fill it, and the simulator runs each thread in Python.
ROW_THREADS = 64


def grid(n, threads=THREADS):
    """(blocks, threads) covering ``n`` elements with one thread each (at least one block)."""
    return max(1, (n + threads - 1) // threads), threads


def launch(kernel, n, *args):
    """Launch ``kernel`` with one thread per element of ``n`` on the running executor's stream;
    nothing for ``n == 0`` (a zero-block grid is an error in CUDA)."""
    if n > 0:
        blocks, threads = grid(n)
        kernel[blocks, threads, current_stream()](*args)


# Operations of tree_reduce. SUM and MAX are False and True, so a caller may pass a bool
# ``is_max``; MAX/MIN skip NaNs met later (a NaN already in place stays), NANMAX/NANMIN
# propagate any NaN as NumPy's max/min (and the CPU reductions) do.
TREE_SUM = 0
TREE_MAX = 1
TREE_MIN = 2
TREE_PROD = 3
TREE_NANMAX = 4
TREE_NANMIN = 5


@cuda.jit(device=True)
def tree_reduce(buf, t, op):
    """Reduce buf[:ROW_THREADS] into buf[0] by ``op`` (a TREE_* code, or a bool: True for max,
    False for sum); every thread of the block calls it."""
    # Halve the active threads each step; the result ends in buf[0].
    step = ROW_THREADS // 2
    while step > 0:
        if t < step:
            a = buf[t]
            b = buf[t + step]
            if op == TREE_SUM:
                buf[t] = a + b
            elif op == TREE_MAX:
                if b > a:
                    buf[t] = b
            elif op == TREE_MIN:
                if b < a:
                    buf[t] = b
            elif op == TREE_PROD:
                buf[t] = a * b
            elif op == TREE_NANMAX:
                if b > a or b != b:
                    if a == a:
                        buf[t] = b
            elif op == TREE_NANMIN:
                if b < a or b != b:
                    if a == a:
                        buf[t] = b
        cuda.syncthreads()
        step //= 2


def split_axis(shape, axis, op):
    """(outer, C, inner) of ``shape`` around ``axis``, as the CPU kernels' split_axis."""
    rank = len(shape)
    r = rank if rank > 0 else 1
    if not -r <= axis < r:
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor of shape "
                         f"{list(shape)} (rank {rank})")
    if axis < 0:
        axis += r
    if rank == 0:
        return 1, 1, 1
    outer = inner = 1
    for d in shape[:axis]:
        outer *= d
    for d in shape[axis + 1:]:
        inner *= d
    return outer, shape[axis], inner


def flat(a):
    """A 1-D view of a contiguous device array (a 0-D one as one element)."""
    return a.reshape(1) if a.ndim == 0 else a.reshape(-1)


def device_empty(shape, dtype):
    """An uninitialized device array, allocated in stream order on the executor's stream."""
    return cuda.device_array(tuple(shape), dtype=np.dtype(dtype), stream=current_stream())


def empty_like(a):
    return device_empty(a.shape, a.dtype)


def float_input(a, op, slot):
    """Refuse what the CPU kernels refuse: only float32/float64 values."""
    if str(a.dtype) not in ("float32", "float64"):
        raise TypeError(f"{op}: {slot} has dtype {a.dtype}, expected float32 or float64")
    return a


def same_shape_dtype(a, b, op, slot_a, slot_b):
    if a.dtype != b.dtype:
        raise TypeError(f"{op}: {slot_b} has dtype {b.dtype}, expected {a.dtype} "
                        f"(the dtype of {slot_a})")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{op}: {slot_b} has shape {list(b.shape)}, expected "
                         f"{list(a.shape)} (the shape of {slot_a})")


def check_flag(flag, n, report, info=None):
    """Raise ``report(position)`` (it returns the CPU kernel's exception) if the kernel recorded
    a bad position in ``flag``. Inside an executor's run the flag is read at the end of the run,
    with every other flag of the run in one copy, and the error names the op (from ``info``);
    outside a run, at once."""
    where = getattr(info, "location", None)

    def located(pos):
        e = report(pos)
        if where is None or isinstance(e, OpError):
            return e
        return OpError(f"kernel failed: {type(e).__name__}: {e}", **where)
    device_check_flag(flag, n, located)


@cuda.jit
def _copy(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i]


@cuda.jit
def _fill(out, value):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = value


def device_copy(a):
    """A new device array equal to ``a`` (contiguous), copied by a kernel on the executor's
    stream: a copy that is a value of its own (assign, an optimizer state kept as it is), never
    a host round trip (a device-to-device ``copy_to_device`` counts as a copy in the tests)."""
    return copy_into(a, empty_like(a))


def copy_into(a, out):
    """out[:] = a (contiguous device arrays of one size), one thread per element, each value
    converted to ``out``'s dtype as a C cast does (cast's kernel); returns ``out``."""
    launch(_copy, out.size, flat(a), flat(out))
    return out


def device_fill(out, value):
    """Fill the device array ``out`` with ``value`` (a NumPy scalar of its dtype); returns it."""
    launch(_fill, out.size, flat(out), value)
    return out


# --- Random streams: numba.cuda.random xoroshiro128p states, one per generating thread --------
# A random kernel keeps its states, made once per kernel maker from its seed (at its first call,
# min(n, RNG_STATES) of them: memory in proportion to the op's output) and advanced in place by
# every launch: two calls draw different numbers, and a maker built again from the same seed
# repeats the sequence. A launch runs T = min(n, states) threads; thread t draws the elements
# t, t + T, ... from state t (a grid-stride loop), so a result depends on the seed and the shapes
# drawn so far only. State t is SplitMix64 of (seed, t), the same on the host (rng_states, one
# copy to the device) and on the device (reseed_states, for a seed that is a device value). The
# simulator, whose threads are Python threads, uses fewer states.
RNG_STATES = 128 if SIMULATOR else 32768
_GOLDEN = 0x9E3779B97F4A7C15


def _splitmix_host(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def rng_count(n):
    """How many states a random kernel whose first output has ``n`` elements keeps."""
    return max(1, min(n, RNG_STATES))


def rng_states(seed, n=RNG_STATES):
    """``rng_count(n)`` xoroshiro128p states on the device from ``seed`` (None: fresh entropy,
    as the CPU kernels' unseeded generator)."""
    import os

    from numba.cuda.random import xoroshiro128p_dtype
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    t = np.arange(rng_count(n), dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF) + (2 * t + np.uint64(1)) * \
            np.uint64(_GOLDEN)
        host = np.empty(t.size, dtype=xoroshiro128p_dtype)
        host["s0"] = _splitmix_host(z)
        host["s1"] = _splitmix_host(z + np.uint64(_GOLDEN))
    return cuda.to_device(host, stream=current_stream())


def rng_grid(n, states):
    """(blocks, threads, T) of a random launch over ``n`` elements: T = min(n, len(states))."""
    total = max(1, min(n, states.shape[0]))
    blocks, threads = grid(total)
    return blocks, threads, total


@cuda.jit(device=True)
def _splitmix(z):
    z = (z ^ (z >> np.uint32(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint32(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint32(31))


@cuda.jit
def _reseed(states, seed):
    # SplitMix64 of (seed, thread) into both words: a state per thread from a seed that lives
    # on the device (a Seed input), without a host round trip.
    t = cuda.grid(1)
    if t < states.shape[0]:
        golden = np.uint64(0x9E3779B97F4A7C15)
        z = np.uint64(seed[0]) + np.uint64(2 * t + 1) * golden
        states[t]["s0"] = _splitmix(z)
        states[t]["s1"] = _splitmix(z + golden)


def reseed_states(states, seed):
    """Seed ``states`` on the device from ``seed``, a one-element integer device array read by
    the kernel: the same seed gives the same states at every call."""
    blocks, threads = grid(states.shape[0])
    _reseed[blocks, threads, current_stream()](states, seed)
