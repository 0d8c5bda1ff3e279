"""Launch helpers shared by the nn plugin's CUDA kernels."""
from numba import cuda

# Threads of a block that reduces one row (a power of two for the tree reduction). Small on
# purpose: rows of a few hundred classes fill it, and the simulator runs each thread in Python.
ROW_THREADS = 64


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


def flat(a):
    """A 1-D view of a contiguous device array (a 0-D one as one element)."""
    return a.reshape(1) if a.ndim == 0 else a.reshape(-1)


def empty_like(a):
    return cuda.device_array(a.shape, dtype=a.dtype)


@cuda.jit(device=True)
def tree_reduce(buf, t, is_max):
    """Reduce buf[:ROW_THREADS] (max or sum) into buf[0]; every thread of the block calls it."""
    # Halve the active threads each step; the result ends in buf[0].
    step = ROW_THREADS // 2
    while step > 0:
        if t < step:
            if is_max:
                if buf[t + step] > buf[t]:
                    buf[t] = buf[t + step]
            else:
                buf[t] += buf[t + step]
        cuda.syncthreads()
        step //= 2


def grid(n, threads=256):
    """(blocks, threads) covering ``n`` elements with one thread each (at least one block)."""
    return max(1, (n + threads - 1) // threads), threads
