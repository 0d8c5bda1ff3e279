"""sequence_expand's host plan, one copy for kernels/cpu/sequence_expand.pyx and
kernels/cuda/sequence_expand.py: which X row every output row copies, and Out's LoD."""
import numpy as np

__all__ = ["expansion"]


def expansion(x, y, ref_level, op):
    """(row index into X of every output row, the output's LoD): X's entries (its LoD's
    sequences, or its rows) each repeated as many times as Y's ``ref_level`` says."""
    rows = np.shape(x.data)[0] if np.ndim(x.data) else 0
    if not y.lod:
        raise ValueError(f"{op}: Y must be a batch of sequences (a tensor with LoD): its "
                         f"LoD gives the repeats")
    level = ref_level if ref_level >= 0 else len(y.lod) + ref_level
    if not 0 <= level < len(y.lod):
        raise ValueError(f"{op}: ref_level {ref_level} is not a LoD level of Y (it has "
                         f"{len(y.lod)})")
    repeats = np.diff(np.asarray(y.lod[level], np.int64))
    if x.lod:
        if len(x.lod) > 1:
            raise ValueError(f"{op}: X may have one LoD level, it has {len(x.lod)}")
        starts = np.asarray(x.lod[0], np.int64)
    else:
        starts = np.arange(rows + 1, dtype=np.int64)
    if len(starts) - 1 != len(repeats):
        raise ValueError(f"{op}: X has {len(starts) - 1} entries, Y's LoD level {level} "
                         f"{len(repeats)} sequences")
    if starts[len(starts) - 1] != rows:
        raise ValueError(f"{op}: X's LoD ends at {starts[len(starts) - 1]}, X has {rows} rows")
    lengths = np.diff(starts)
    entry = np.repeat(np.arange(len(repeats)), repeats)          # one per copy
    copy_len = lengths[entry]
    first = np.concatenate([[0], np.cumsum(copy_len)])[:-1]
    total = int(copy_len.sum())
    index = starts[np.repeat(entry, copy_len)] + np.arange(total) - np.repeat(first, copy_len)
    lod = [[int(v) for v in np.concatenate([[0], np.cumsum(copy_len)])]]
    return index, lod
