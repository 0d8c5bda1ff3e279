"""Helpers of the nn plugin's CUDA LoD sequence kernels (sequence*.py): the device copy of LoD
metadata, cached per kernel, and the row -> sequence search kernels index it with.

LoD is host metadata (lists of offsets on the Tensor). A kernel that indexes rows by sequence
needs the offsets on the device: that is the one host->device copy these kernels make, a few
int64 per sequence, and it is cached on the kernel object keyed by the tuple of offsets, so a
batch layout seen before copies nothing.
"""
from collections import OrderedDict

import numpy as np
from numba import cuda

from headrace.devices.cuda import current_stream

# Layouts remembered per kernel: a training loop cycles through a few bucketed batch shapes.
KEEP = 8


class DeviceLoD:
    """``get(key, build)``: the device copy of ``build()``'s int64 host array (with its
    host-side ``meta``), built and copied only the first time ``key`` (a tuple) is seen."""

    def __init__(self, keep=KEEP):
        self.keep = keep
        self._cache = OrderedDict()

    def get(self, key, build):
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit[1], hit[2]
        host, meta = build()
        host = np.ascontiguousarray(host, dtype=np.int64)
        if host.size == 0:
            host = np.zeros(1, np.int64)  # a kernel argument of no elements is still passed
        dev = cuda.to_device(host, stream=current_stream())
        # The host array is kept with its copy: the copy may still be reading it.
        self._cache[key] = (host, dev, meta)
        if len(self._cache) > self.keep:
            self._cache.popitem(last=False)
        return dev, meta


def lod_key(lod):
    """A hashable key of a LoD (list of offset lists)."""
    return tuple(tuple(int(v) for v in level) for level in lod)


def describes(off, rows):
    """Whether int64 offsets ``off`` describe ``rows`` rows: they start at 0, never decrease
    and end at ``rows``."""
    return off.size >= 1 and off[0] == 0 and off[-1] == rows and not (np.diff(off) < 0).any()


def level_offsets(cache, level, rows, refusal):
    """(device offsets, sequence count) of one LoD ``level`` of a tensor of ``rows`` rows,
    copied once per layout through ``cache`` (a DeviceLoD); ``refusal(off)`` is the error
    raised when the level does not describe the rows."""
    def build():
        off = np.asarray(level, np.int64)
        if not describes(off, rows):
            raise refusal(off)
        return off, off.size - 1
    return cache.get((rows, tuple(int(v) for v in level)), build)


def offsets(lod, rows, op, slot="X"):
    """The last LoD level as int64, checked as the CPU kernels check it (start at 0, never
    decrease, end at the row count)."""
    if not lod:
        raise ValueError(f"{op}: {slot} must be a batch of sequences (a tensor with LoD)")
    off = np.asarray(lod[-1], np.int64).reshape(-1)
    if not describes(off, rows):
        raise ValueError(f"{op}: {slot}'s LoD {list(lod[-1])} does not describe its {rows} "
                         f"rows (it must start at 0, not decrease, and end at {rows})")
    return off


@cuda.jit(device=True)
def seq_of(off, n, r):
    """The s with off[s] <= r < off[s + 1], for off of n + 1 offsets from 0 and r < off[n]
    (a binary search: the sequence is never empty, since it holds r)."""
    lo = 0
    hi = n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if off[mid] <= r:
            lo = mid
        else:
            hi = mid
    return lo


@cuda.jit(device=True)
def three_lists(lists, n):
    """The three int64 arrays that device lists hold back to back: two of n + 1 values
    (offsets of n sequences or entries), then the third (the rest)."""
    return lists[:n + 1], lists[n + 1:2 * (n + 1)], lists[2 * (n + 1):]


def rows_of(a):
    """The row count and the elements per row of a device array (its first dim leads)."""
    if a.ndim == 0:
        return 0, 1
    d = 1
    for s in a.shape[1:]:
        d *= s
    return a.shape[0], d
