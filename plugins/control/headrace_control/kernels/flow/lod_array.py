"""lod_tensor_to_array / array_to_lod_tensor / shrink_rnn_memory(_grad) over TensorArray and
LoDRankTable values."""
import numpy as np

from headrace.runtime.tensor import Tensor, TensorArray, lengths_to_offsets

from ._frame import scalar
from ._lod import Gather, host, n_entries, sub_lod
from .rank_table import rank_table_input


class LodTensorToArray:
    """Out[t] = item t of every sequence longer than t, in rank order."""

    def __init__(self, attrs, info):
        self.device, self.place = info.device, info.place

    def __call__(self, frame):
        op = "lod_tensor_to_array"
        table = rank_table_input(frame, op)
        x = frame.input("X")
        if x is None:
            raise ValueError(f"{op}: input 'X' has no value")
        data, lod, level = host(self.device, x), frame.lod("X") or [], table.level
        if level >= len(lod) or n_entries(lod, 0, level) != len(table):
            raise ValueError(f"{op}: X must have {len(table)} sequences at LoD level {level} "
                             f"(its rank table's), found LoD {_describe(lod)}")
        offsets = np.asarray(lod[level], dtype=np.int64)
        index = np.array([i for i, _ in table], dtype=np.int64)
        lengths = np.array([n for _, n in table], dtype=np.int64)
        if not np.array_equal(offsets[index + 1] - offsets[index], lengths):
            raise ValueError(f"{op}: X's sequences at LoD level {level} are not the lengths "
                             f"its rank table holds")
        steps = int(lengths[0]) if len(lengths) else 0
        out = TensorArray()
        if level + 1 == len(lod):  # items are rows: one gather for every step
            alive = _alive(lengths, steps)
            first = np.cumsum(alive) - alive  # where each step's rows start in the gather
            step = np.repeat(np.arange(steps), alive)
            rank = np.arange(int(alive.sum())) - np.repeat(first, alive)
            rows = self.device.to_device(data[offsets[index][rank] + step], self.place)
            out.extend(Tensor(rows[a:a + n]) for a, n in zip(first.tolist(), alive.tolist()))
            frame.set_output("Out", out)
            return
        for t in range(steps):
            g = Gather(len(lod) - level - 1)
            for index_k, length in table:
                if t >= length:
                    break  # longest first: every later sequence has ended too
                start = lod[level][index_k] + t
                g.add(*sub_lod(lod, start, start + 1, level + 1))
            out.append(Tensor(self.device.to_device(data[g.index()], self.place), g.lod()))
        frame.set_output("Out", out)


def _alive(lengths, steps):
    """Per step, how many sequences (lengths sorted longest first) are longer than it."""
    return np.searchsorted(-lengths, -np.arange(steps), side="left").astype(np.int64)


def _describe(lod):
    return f"{[len(lv) - 1 for lv in lod]} entries per level" if lod else "none"


class ArrayToLodTensor:
    """The inverse of LodTensorToArray: sequences back in their original order, under the
    rank table's LoD. A missing step (a gradient nothing wrote) is zeros, one row per
    sequence."""

    def __init__(self, attrs, info):
        self.device, self.place = info.device, info.place
        shapes, dtypes = info.out_shapes.get("Out") or [None], info.out_dtypes.get("Out") or [None]
        self.declared = (shapes[0], dtypes[0])

    def __call__(self, frame):
        op = "array_to_lod_tensor"
        table = rank_table_input(frame, op)
        arr = frame.input("X") or []
        elems = [None if e is None or e.data is None else
                 (host(self.device, e.data), e.lod or []) for e in arr]
        tail, dtype, depth = self._row_form(op, elems)
        order = sorted(range(len(table)), key=lambda k: table[k][0])  # original order
        lengths = [table[k][1] for k in order]
        if depth == 0:
            data = self._rows(op, table, elems, order, tail, dtype)
            out_lod = []
        else:
            data, out_lod = self._entries(op, table, elems, order, tail, dtype, depth)
        lod = [list(lv) for lv in table.coarse_lod] + [lengths_to_offsets(lengths)] + out_lod
        frame.set_output("Out", self.device.to_device(data, self.place), lod)

    @staticmethod
    def _rows(op, table, elems, order, tail, dtype):
        """Items of one row: rank position k at step s is row k of step s."""
        steps = table[0][1] if table else 0
        blocks = []
        counts = _alive(np.array([n for _, n in table], np.int64), steps).tolist()
        for s in range(steps):
            alive = counts[s]
            e = elems[s] if s < len(elems) else None
            if e is None:
                blocks.append(np.zeros((alive,) + tail, dtype))
            elif e[0].shape[0] < alive:
                raise ValueError(f"{op}: step {s} holds {e[0].shape[0]} entries, but {alive} "
                                 f"sequences run at that step")
            else:
                blocks.append(e[0])
        bases = np.cumsum([0] + [b.shape[0] for b in blocks])
        idx = [bases[:table[k][1]] + k for k in order]
        idx = np.concatenate(idx) if idx else np.zeros(0, np.int64)
        src = np.concatenate(blocks) if blocks else np.zeros((0,) + tail, dtype)
        return src[idx]

    @staticmethod
    def _entries(op, table, elems, order, tail, dtype, depth):
        """Items with LoD of their own (every step has a value: see ``_row_form``)."""
        bases = np.cumsum([0] + [e[0].shape[0] for e in elems])
        out = Gather(depth)
        for k in order:
            for s in range(table[k][1]):
                if s >= len(elems):
                    raise ValueError(f"{op}: X has {len(elems)} steps, the rank table's "
                                     f"longest sequence {table[0][1]}")
                data, lod = elems[s]
                if k >= n_entries(lod, data.shape[0]):
                    raise ValueError(f"{op}: step {s} holds {n_entries(lod, data.shape[0])} "
                                     f"entries, but {table.alive(s)} sequences run at that "
                                     f"step")
                sub, rows = sub_lod(lod, k, k + 1, 0)
                out.add(sub, (rows[0] + bases[s], rows[1] + bases[s]))
        return np.concatenate([e[0] for e in elems])[out.index()], out.lod()

    def _row_form(self, op, elems):
        """(row shape, dtype, LoD depth) of the steps."""
        present = [e for e in elems if e is not None]
        first = present[0][0] if present else None
        for data, _ in present[1:]:
            if data.shape[1:] != first.shape[1:] or data.dtype != first.dtype:
                raise ValueError(f"{op}: the steps of X differ in row shape or dtype "
                                 f"({first.dtype}{list(first.shape)} and "
                                 f"{data.dtype}{list(data.shape)})")
        if present:
            data, lod = present[0]
            if len(present) < len(elems) and lod:
                raise ValueError(f"{op}: X has steps without a value beside steps with LoD; "
                                 f"their zeros cannot be given a LoD")
            return tuple(data.shape[1:]), data.dtype, len(lod)
        shape, dtype = self.declared
        if shape is None or dtype is None or any(d < 0 for d in shape[1:]):
            raise ValueError(f"{op}: no step of X has a value, and Out's declared shape "
                             f"{list(shape or [])} does not give the row shape")
        return tuple(shape[1:]), np.dtype(dtype), 0


class ShrinkRnnMemory:
    """Out = the first k entries of X, k = the number of sequences longer than step I."""

    def __init__(self, attrs, info):
        self.device, self.place = info.device, info.place
        self.may_alias = info.may_alias("X", "Out")

    def __call__(self, frame):
        op = "shrink_rnn_memory"
        table = rank_table_input(frame, op)
        step = scalar(self.device, frame.input("I"), f"{op}: I")
        x = frame.input("X")
        if x is None:
            raise ValueError(f"{op}: input 'X' has no value")
        lod = frame.lod("X") or []
        k = table.alive(step)
        rows = x.shape[0] if len(x.shape) else 0
        if k > n_entries(lod, rows):
            what = "sequences at LoD level 0" if lod else "rows"
            raise ValueError(f"{op}: {k} sequences run at step {step}, but X holds only "
                             f"{n_entries(lod, rows)} {what}")
        lengths, (_, height) = sub_lod(lod, 0, k, 0) if lod else ([], (0, k))
        out = x[:height]
        if not self.may_alias:
            out = self.device.to_device(np.array(host(self.device, out)), self.place)
        frame.set_output("Out", out, [lengths_to_offsets(lv) for lv in lengths])


class ShrinkRnnMemoryGrad:
    """X@GRAD = Out@GRAD in X's first rows, zeros below, with X's LoD."""

    def __init__(self, attrs, info):
        self.device, self.place = info.device, info.place
        self.wanted = info.wants("X@GRAD")

    def __call__(self, frame):
        if not self.wanted:
            return
        op = "shrink_rnn_memory_grad"
        x, dout = frame.input("X"), frame.input("Out@GRAD")
        if x is None:
            raise ValueError(f"{op}: input 'X' has no value")
        xh = host(self.device, x)
        dx = np.zeros(xh.shape, xh.dtype if dout is None else host(self.device, dout).dtype)
        if dout is not None:
            g = host(self.device, dout)
            if g.shape[1:] != xh.shape[1:] or g.shape[0] > xh.shape[0]:
                raise ValueError(f"{op}: Out@GRAD {list(g.shape)} does not fit in the first "
                                 f"rows of X {list(xh.shape)}")
            dx[:g.shape[0]] = g
        frame.set_output("X@GRAD", self.device.to_device(dx, self.place), frame.lod("X"))


KERNELS = [("lod_tensor_to_array", LodTensorToArray, None, "frame"),
           ("array_to_lod_tensor", ArrayToLodTensor, None, "frame"),
           ("shrink_rnn_memory", ShrinkRnnMemory, None, "frame"),
           ("shrink_rnn_memory_grad", ShrinkRnnMemoryGrad, None, "frame")]
