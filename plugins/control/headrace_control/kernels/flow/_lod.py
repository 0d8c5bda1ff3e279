"""LoD arithmetic the sequence kernels share (Paddle's GetSubLoDAndAbsoluteOffset and
AppendLoD), and moving values between the device and the host.

The sequence kernels compute which rows go where on the host (LoD is host data) and gather
the rows with one fancy index per output; on a CUDA place the data makes the round trip."""
import numpy as np

from headrace.runtime.tensor import lengths_to_offsets


def sub_lod(lod, start, end, level):
    """``(lengths, (row_start, row_end))`` of entries ``[start, end)`` of LoD level ``level``:
    ``lengths`` holds, per level from ``level`` down, the lengths of the entries they span."""
    lengths = []
    for offsets in lod[level:]:
        lengths.append([offsets[i + 1] - offsets[i] for i in range(start, end)])
        start, end = offsets[start], offsets[end]
    return lengths, (start, end)


def n_entries(lod, rows, level=0):
    """The number of entries at LoD level ``level`` (the rows when there is no LoD)."""
    return len(lod[level]) - 1 if lod else rows


class Gather:
    """Collects entries (row ranges and their sub-LoD) into one output."""
    __slots__ = ("ranges", "lengths", "depth")

    def __init__(self, depth):
        self.ranges = []
        self.depth = depth                         # LoD levels of the output
        self.lengths = [[] for _ in range(depth)]  # per level, the entries' lengths

    def add(self, lengths, rows):
        for acc, lv in zip(self.lengths, lengths):
            acc.extend(lv)
        if rows[1] > rows[0]:
            self.ranges.append(rows)

    def index(self):
        """The row indices to gather (int64, possibly empty)."""
        if not self.ranges:
            return np.zeros(0, np.int64)
        return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in self.ranges])

    def lod(self, prefix=()):
        """The output's LoD: ``prefix`` levels (offsets) on top of the gathered ones."""
        return [list(p) for p in prefix] + [lengths_to_offsets(lv) for lv in self.lengths]


def host(device, value):
    """``value`` as a host NumPy array."""
    return np.asarray(device.to_host(value))


