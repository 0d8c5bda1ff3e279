"""sequence_pad's host logic, one copy for kernels/cpu/sequence_pad.pyx and
kernels/cuda/sequence_pad.py: X's last LoD level checked against its rows, and the padded
width."""
import numpy as np

__all__ = ["integer_lengths", "last_offsets", "padded_width", "unpad_lengths"]


def last_offsets(lod, rows, op):
    """X's last LoD level as int64 offsets, refused unless it ends at X's ``rows``."""
    if not lod:
        raise ValueError(f"{op}: X must be a batch of sequences (a tensor with LoD)")
    off = np.asarray(lod[len(lod) - 1], np.int64)
    if off[len(off) - 1] != rows:
        raise ValueError(f"{op}: X's LoD ends at {off[len(off) - 1]}, X has {rows} rows")
    return off


def padded_width(lengths, padded, op):
    """Out's steps per sequence: the longest sequence's length for padded_length -1, else
    padded_length, refused when a sequence is longer."""
    longest = int(lengths.max()) if len(lengths) else 0
    if padded == -1:
        return longest
    if longest > padded:
        raise ValueError(f"{op}: a sequence of length {longest} does not fit padded_length "
                         f"{padded}")
    return padded


def integer_lengths(dtype, op):
    """Refuse a Length tensor of a non-integer ``dtype`` (checked before its values are read)."""
    if dtype.kind not in "iu":
        raise TypeError(f"{op}: Length must hold integers, got {dtype}")


def unpad_lengths(raw, n, width, op):
    """sequence_unpad's Length values (a host array) as int64, refused unless they are one
    length in [0, width] per sequence of X's ``n``."""
    lengths = np.asarray(raw).reshape(-1).astype(np.int64)
    if len(lengths) != n or (lengths < 0).any() or (lengths > width).any():
        raise ValueError(f"{op}: Length {lengths.tolist()} must hold one length in [0, "
                         f"{width}] per sequence of X ({n})")
    return lengths
