"""Row reductions for plugins' Numba CUDA kernels: a row (a softmax or norm row, a channel)
reduced by one block of ROW_THREADS lanes in a shared-memory tree, or, when it is short, by
one thread alone (summed in order, no barriers: a block would leave most lanes idle through
every tree step), and the float32 rounding with which a kernel replays a CPU kernel's float
arithmetic. Kept beside cuda_launch (which holds tree_reduce itself) as its own module.
"""
from numba import cuda, float32, float64

from .cuda_launch import ROW_THREADS, grid, tree_reduce

__all__ = ["SHORT_ROW", "row_grid", "row_lanes", "block_reduce", "row_total", "rounded"]

# Rows of at most this many values run a thread each.
SHORT_ROW = 32


def row_grid(rows, length, short=SHORT_ROW):
    """(blocks, threads, block mode) of a launch over ``rows`` rows of ``length`` values: a
    block per row (block mode True) when rows are longer than ``short``, else a thread per
    row."""
    block = length > short
    return ((rows, ROW_THREADS) if block else grid(rows)) + (block,)


@cuda.jit(device=True)
def row_lanes(block):
    """(row, first lane, lane step) of this thread in a ``row_grid`` launch: a block's threads
    share a row, or a thread owns one."""
    if block:
        return cuda.blockIdx.x, cuda.threadIdx.x, ROW_THREADS
    return cuda.grid(1), 0, 1


@cuda.jit(device=True)
def block_reduce(buf, s, op):
    """Every thread's ``s`` reduced over the block by ``op`` (tree_reduce's codes), read by
    all threads; ``buf`` (ROW_THREADS values of shared memory) may be reused on return."""
    t = cuda.threadIdx.x
    buf[t] = s
    cuda.syncthreads()
    tree_reduce(buf, t, op)
    r = buf[0]
    cuda.syncthreads()                   # every thread has read buf[0] before it is reused
    return r


@cuda.jit(device=True)
def row_total(buf, s, block):
    """The row's sum of its lanes' partial sums ``s``: the block's tree in block mode, else
    the lone thread's own."""
    if block:
        return block_reduce(buf, s, False)
    return s


@cuda.jit(device=True)
def rounded(v, is32):
    """``v`` rounded to float32 when ``is32``: a float32 operation computed in double and
    rounded once is the float32 operation, so a kernel replays a CPU kernel's float
    arithmetic step by step."""
    return float64(float32(v)) if is32 else v
