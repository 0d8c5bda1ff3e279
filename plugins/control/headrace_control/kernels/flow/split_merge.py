"""split_lod_tensor / merge_lod_tensor (LoD kernels: Tensors in, Tensors out).

The mask and the LoD are read on the host; the rows move with one gather per output."""
import numpy as np

from headrace.runtime.tensor import Tensor

from ._lod import Gather, host, n_entries, sub_lod


def _mask(device, mask, op):
    if mask is None or mask.data is None:
        raise ValueError(f"{op}: input 'Mask' has no value")
    m = host(device, mask.data)
    if m.ndim != 2 or m.shape[1] != 1:
        raise ValueError(f"{op}: Mask must have shape [N, 1], found {list(m.shape)}")
    return m.reshape(-1).astype(bool)


def _entries_word(lod, level):
    return f"sequences at LoD level {level}" if lod else "rows"


class SplitLoDTensor:
    """OutTrue / OutFalse: the entries of X at ``level`` where Mask is true / false."""

    def __init__(self, attrs, info):
        self.level = attrs["level"]
        self.device, self.place = info.device, info.place

    def __call__(self, x, mask):
        op, level, dev = "split_lod_tensor", self.level, self.device
        m = _mask(dev, mask, op)
        data, lod = host(dev, x.data), x.lod or []
        if data.ndim == 0:
            raise ValueError(f"{op}: X must have a first dim to split, found a scalar")
        if (lod and level >= len(lod)) or (not lod and level > 0):
            raise ValueError(f"{op}: level {level} needs X to have more than {level} LoD "
                             f"levels, found {len(lod)}")
        n = n_entries(lod, data.shape[0], level)
        if m.size != n:
            raise ValueError(f"{op}: Mask has {m.size} entries, X has {n} "
                             f"{_entries_word(lod, level)}")
        if not lod:  # rows: one boolean gather per branch
            return (Tensor(dev.to_device(data[m], self.place)),
                    Tensor(dev.to_device(data[~m], self.place)))
        sides = (Gather(len(lod) - level), Gather(len(lod) - level))  # false, true
        for i, flag in enumerate(m.tolist()):
            lengths, rows = sub_lod(lod, i, i + 1, level)
            sides[flag].add(lengths, rows)
        f, t = (Tensor(dev.to_device(data[g.index()], self.place), g.lod()) for g in sides)
        return t, f


class MergeLoDTensor:
    """Out: for each mask entry in order, the next entry of InTrue or InFalse; X's LoD levels
    above ``level`` on top. A branch without a value stands for zeros (a branch block that
    did not run, or a gradient nothing produced)."""

    def __init__(self, attrs, info):
        self.level = attrs["level"]
        self.device, self.place = info.device, info.place
        shapes, dtypes = info.out_shapes.get("Out") or [None], info.out_dtypes.get("Out") or [None]
        self.declared = (shapes[0], dtypes[0])  # the fallback when neither branch has a value

    def __call__(self, x, mask, in_true, in_false):
        op, level, dev = "merge_lod_tensor", self.level, self.device
        m = _mask(dev, mask, op)
        n = m.size
        xlod = (x.lod or []) if x is not None else []
        if level > 0 and (len(xlod) < level or xlod[level - 1][-1] != n):
            found = (f"{len(xlod)} LoD levels" if len(xlod) < level
                     else f"{xlod[level - 1][-1]} entries at level {level}")
            raise ValueError(f"{op}: X must have at least {level} LoD levels ending in the "
                             f"{n} entries of Mask, found {found}")
        counts = (n - int(m.sum()), int(m.sum()))  # false, true
        # Entries of X below `level`, per side: what a branch without LoD is cut by.
        x_sides = None
        if len(xlod) > level:
            x_sides = (Gather(len(xlod) - level), Gather(len(xlod) - level))
            for i, flag in enumerate(m.tolist()):
                x_sides[flag].add(*sub_lod(xlod, i, i + 1, level))
        branches = [self._branch(op, slot, t, counts[side], x_sides and x_sides[side])
                    for side, slot, t in ((0, "InFalse", in_false), (1, "InTrue", in_true))]
        tail, dtype = self._tail(op, branches)
        depth = max((len(b[1]) for b in branches if b is not None and b[2]), default=0)
        # Entries of a missing branch take their rows and sub-LoD from X below `level`.
        use_x = len(xlod) > level
        if branches[0] is None or branches[1] is None:
            depth = max(depth, len(xlod) - level if use_x else 0)
        if depth == 0:  # every entry is one row: two boolean scatters
            data = np.zeros((n,) + tail, dtype)
            for side, sel in ((0, ~m), (1, m)):
                if branches[side] is not None:
                    data[sel] = branches[side][0]
            return (Tensor(dev.to_device(data, self.place), [list(v) for v in xlod[:level]]),)
        out = Gather(depth)
        nxt, sizes, pieces = [0, 0], [0, 0], []
        for i, flag in enumerate(m.tolist()):
            b = branches[flag]
            if b is None:
                lengths, rows = sub_lod(xlod, i, i + 1, level) if use_x else ([], (i, i + 1))
                rows = (sizes[flag], sizes[flag] + rows[1] - rows[0])
            else:
                lengths, rows = sub_lod(b[1], nxt[flag], nxt[flag] + 1, 0) if b[1] else \
                    ([], (nxt[flag], nxt[flag] + 1))
                nxt[flag] += 1
            if len(lengths) < depth:
                raise ValueError(f"{op}: the entries of InTrue and InFalse have different "
                                 f"LoD depths ({len(lengths)} and {depth} levels)")
            sizes[flag] = max(sizes[flag], rows[1])
            pieces.append((flag, lengths, rows))
        srcs = []
        for side in (0, 1):
            b = branches[side]
            srcs.append(b[0] if b is not None else np.zeros((sizes[side],) + tail, dtype))
        base = (0, srcs[0].shape[0])  # InTrue's rows follow InFalse's in the source
        for flag, lengths, rows in pieces:
            out.add(lengths, (rows[0] + base[flag], rows[1] + base[flag]))
        data = np.concatenate(srcs)[out.index()]
        return (Tensor(dev.to_device(data, self.place), out.lod(xlod[:level])),)

    def _branch(self, op, slot, t, count, x_side):
        """``(host data, LoD, entries)`` of a branch input, or None when it has no value.
        A branch without LoD whose rows are those X's entries on its side span takes their
        LoD (a gradient that lost its LoD on the way: X is split's forward input then)."""
        if t is None or t.data is None:
            return None
        data, lod = host(self.device, t.data), t.lod or []
        if data.ndim == 0:
            raise ValueError(f"{op}: {slot} must have a first dim, found a scalar")
        if not lod and x_side is not None and data.shape[0] != count and \
                data.shape[0] == sum(b - a for a, b in x_side.ranges):
            lod = x_side.lod()
        entries = n_entries(lod, data.shape[0])
        if entries != count:
            raise ValueError(f"{op}: Mask selects {count} entries for {slot}, which holds "
                             f"{entries} {_entries_word(lod, 0)}")
        return data, lod, entries

    def _tail(self, op, branches):
        present = [b[0] for b in branches if b is not None]
        if len(present) == 2:
            a, b = present
            if a.shape[1:] != b.shape[1:] or a.dtype != b.dtype:
                raise ValueError(f"{op}: InTrue ({b.dtype}{list(b.shape)}) and InFalse "
                                 f"({a.dtype}{list(a.shape)}) must agree beyond their "
                                 f"first dim and in dtype")
        if present:
            return tuple(present[0].shape[1:]), present[0].dtype
        shape, dtype = self.declared
        if shape is None or dtype is None or any(d < 0 for d in shape[1:]):
            raise ValueError(f"{op}: neither InTrue nor InFalse has a value, and Out's "
                             f"declared shape {list(shape or [])} does not give the row shape")
        return tuple(shape[1:]), np.dtype(dtype)


KERNELS = [("split_lod_tensor", SplitLoDTensor, None, "lod"),
           ("merge_lod_tensor", MergeLoDTensor, None, "lod")]
