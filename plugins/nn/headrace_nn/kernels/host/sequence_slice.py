"""sequence_slice's host plan, one copy for kernels/cpu/sequence_slice.pyx and
kernels/cuda/sequence_slice.py: Offset and Length checked against X's last LoD level, and Out's
offsets and LoD."""
import numpy as np

from headrace.runtime.tensor import lengths_to_offsets

__all__ = ["slice_layout"]


def slice_layout(lod, start, size, op):
    """(X's offsets, starts, sizes, Out's offsets, Out's LoD) for X's ``lod`` and the flat
    Offset ``start`` and Length ``size`` (one per sequence of the last level; int64 arrays
    from here on)."""
    if not lod:
        raise ValueError(f"{op}: X must be a batch of sequences (a tensor with LoD)")
    off = np.asarray(lod[len(lod) - 1], np.int64)
    n = len(off) - 1
    if start.size != n or size.size != n:
        raise ValueError(f"{op}: Offset and Length must hold one value per sequence ({n}); "
                         f"found {start.size} and {size.size}")
    start, size = start.astype(np.int64), size.astype(np.int64)
    lengths = np.diff(off)
    bad = np.nonzero((start < 0) | (size < 0) | (start + size > lengths))[0]
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{op}: sequence {i} has {int(lengths[i])} rows; Offset "
                         f"{int(start[i])} and Length {int(size[i])} do not fit")
    out_off = lengths_to_offsets(size.tolist())
    return off, start, size, out_off, [list(level) for level in lod[:-1]] + [out_off]
