"""lod_rank_table / max_sequence_len / reorder_lod_tensor_by_rank(_grad), and the value of a
``lod_rank_table`` variable (:class:`LoDRankTable`)."""
import numpy as np

from ._lod import Gather, host, n_entries, sub_lod


class LoDRankTable(list):
    """The value of a LOD_RANK_TABLE variable: a list of ``(index, length)`` per sequence of
    LoD level ``level``, longest first (stable), and ``coarse_lod``, the LoD levels above
    ``level`` (offsets), which array_to_lod_tensor puts back on top. A list, so that the
    executor fetches it as it fetches tensor arrays and step scopes (and, like a list, it is
    built from its items: ``LoDRankTable(items, level, coarse_lod)``)."""
    __slots__ = ("level", "coarse_lod")

    def __init__(self, items=(), level=0, coarse_lod=None):
        super().__init__(items)
        self.level = level
        self.coarse_lod = coarse_lod or []

    @classmethod
    def from_lod(cls, lod, level):
        lengths = np.diff(np.asarray(lod[level], dtype=np.int64))
        order = np.argsort(-lengths, kind="stable")
        items = [(int(i), int(lengths[i])) for i in order]
        return cls(items, level, [list(lv) for lv in lod[:level]])

    @property
    def items(self):
        """The ``(index, length)`` pairs, longest first, as a tuple."""
        return tuple(self)

    def alive(self, step):
        """How many sequences are longer than ``step`` (the batch at that time step)."""
        return sum(1 for _, n in self if n > step)

    def __eq__(self, other):
        return isinstance(other, LoDRankTable) and (self.level, self.coarse_lod) == \
            (other.level, other.coarse_lod) and list.__eq__(self, other)

    __hash__ = None

    def __repr__(self):
        return f"LoDRankTable(level={self.level}, items={list(self)})"


def rank_table_input(frame, op):
    """The LoDRankTable of input slot RankTable, or a clear error."""
    table = frame.input("RankTable")
    if not isinstance(table, LoDRankTable):
        found = "no value" if table is None else type(table).__name__
        raise ValueError(f"{op}: RankTable must hold a rank table (made by lod_rank_table), "
                         f"found {found}")
    return table


class LodRankTable:
    """Out = the rank table of X's LoD level ``level``."""

    def __init__(self, attrs, info):
        self.level = attrs["level"]

    def __call__(self, frame):
        lod = frame.lod("X") or []
        if self.level >= len(lod):
            raise ValueError(f"lod_rank_table: X has {len(lod)} LoD levels, so no level "
                             f"{self.level} to rank (X must be a batch of sequences)")
        frame.set_output("Out", LoDRankTable.from_lod(lod, self.level))


class MaxSequenceLen:
    """Out = [length of the longest sequence] (int64, on the op's device; 0 when none)."""

    def __init__(self, attrs, info):
        self.device, self.place = info.device, info.place

    def __call__(self, frame):
        table = rank_table_input(frame, "max_sequence_len")
        n = table[0][1] if table else 0
        frame.set_output("Out", self.device.to_device(np.array([n], np.int64), self.place))


def _entries(data, lod, table, op, slot):
    """Per entry of X's LoD level 0: ``(sub-LoD lengths, row range)`` (None for rows)."""
    n = n_entries(lod, data.shape[0] if data.ndim else 0)
    if n != len(table):
        what = "sequences at LoD level 0" if lod else "rows"
        raise ValueError(f"{op}: {slot} holds {n} {what}, the rank table {len(table)} "
                         f"sequences")
    return [sub_lod(lod, i, i + 1, 0) for i in range(n)] if lod else None


class _Reorder:
    op = None

    def __init__(self, attrs, info):
        self.device, self.place = info.device, info.place

    def __call__(self, frame):
        table = rank_table_input(frame, self.op)
        x = frame.input("X")
        if x is None:
            raise ValueError(f"{self.op}: input 'X' has no value")
        data, lod = host(self.device, x), frame.lod("X") or []
        entries = _entries(data, lod, table, self.op, "X")
        if not lod:  # rows: one gather
            order = np.array(self.order(table), dtype=np.int64)
            frame.set_output("Out", self.device.to_device(data[order], self.place))
            return
        out = Gather(len(lod))
        for k in self.order(table):
            out.add(*entries[k])
        frame.set_output("Out", self.device.to_device(data[out.index()], self.place),
                         out.lod())


class ReorderLoDTensorByRank(_Reorder):
    """Out's entry k = X's entry RankTable[k].index."""
    op = "reorder_lod_tensor_by_rank"

    @staticmethod
    def order(table):
        return [index for index, _ in table]


class ReorderLoDTensorByRankGrad(_Reorder):
    """Out's entry RankTable[k].index = X's entry k (X: the forward Out's gradient)."""
    op = "reorder_lod_tensor_by_rank_grad"

    @staticmethod
    def order(table):
        return [k for _, k in sorted((index, k) for k, (index, _) in enumerate(table))]


KERNELS = [("lod_rank_table", LodRankTable, None, "frame"),
           ("max_sequence_len", MaxSequenceLen, None, "frame"),
           ("reorder_lod_tensor_by_rank", ReorderLoDTensorByRank, None, "frame"),
           ("reorder_lod_tensor_by_rank_grad", ReorderLoDTensorByRankGrad, None, "frame")]
