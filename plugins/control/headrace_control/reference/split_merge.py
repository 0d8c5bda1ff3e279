"""split_lod_tensor / merge_lod_tensor in NumPy, over nested lists of entries.

Independent of the kernels' offset arithmetic: a LoD tensor is unpacked into a tree (entries
of level 0, each a list of entries of level 1, ..., down to rows), entries are moved as
whole subtrees, and the result is packed again."""
import numpy as np

from headrace.runtime.tensor import Tensor


def to_tree(data, lod):
    """The entries of level 0 as nested lists (rows at the bottom); rows when no LoD."""
    items = [data[i] for i in range(data.shape[0])]
    for offsets in reversed(lod or []):
        items = [items[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    return items


def flatten(entries, times):
    """The entries ``times`` levels further down."""
    for _ in range(times):
        entries = [child for e in entries for child in e]
    return entries


def from_tree(entries, depth, tail, dtype):
    """Pack entries nested ``depth`` levels deep into a Tensor (LoD of ``depth`` levels)."""
    lod = [[0] for _ in range(depth)]
    rows = []

    def walk(node, d):
        if d == depth:
            rows.append(np.asarray(node))
            return
        lod[d].append(lod[d][-1] + len(node))
        for child in node:
            walk(child, d + 1)

    for e in entries:
        walk(e, 0)
    data = np.array(rows, dtype=dtype).reshape((len(rows),) + tuple(tail))
    return Tensor(data, lod)


def _as_tensor(v):
    return v if isinstance(v, Tensor) else Tensor(np.asarray(v), [])


def _mask(mask):
    m = np.asarray(getattr(mask, "data", mask))
    if m.ndim != 2 or m.shape[1] != 1:
        raise ValueError(f"Mask must have shape [N, 1], found {list(m.shape)}")
    return [bool(v) for v in m.reshape(-1)]


def split_lod_tensor(inputs, attrs):
    x = _as_tensor(inputs["X"])
    data, lod, level = np.asarray(x.data), x.lod or [], attrs.get("level", 0)
    if data.ndim == 0 or (lod and level >= len(lod)) or (not lod and level > 0):
        raise ValueError("split_lod_tensor: X has no entries at that level")
    entries = flatten(to_tree(data, lod), level)
    mask = _mask(inputs["Mask"])
    if len(mask) != len(entries):
        raise ValueError("split_lod_tensor: one mask entry per entry of X")
    depth = len(lod) - level if lod else 0
    pick = [[e for e, f in zip(entries, mask) if f == side] for side in (True, False)]
    return {"OutTrue": from_tree(pick[0], depth, data.shape[1:], data.dtype),
            "OutFalse": from_tree(pick[1], depth, data.shape[1:], data.dtype)}


def _zeros_like_tree(node, tail, dtype):
    if isinstance(node, list):
        return [_zeros_like_tree(c, tail, dtype) for c in node]
    return np.zeros(tail, dtype)


def merge_lod_tensor(inputs, attrs):
    mask = _mask(inputs["Mask"])
    level = attrs.get("level", 0)
    x = _as_tensor(inputs["X"])
    xlod = x.lod or []
    if level > 0 and (len(xlod) < level or xlod[level - 1][-1] != len(mask)):
        raise ValueError("merge_lod_tensor: X's upper LoD levels do not end in the mask entries")
    given = {True: inputs.get("InTrue"), False: inputs.get("InFalse")}
    present = [_as_tensor(v) for v in given.values() if v is not None]
    if not present:
        raise ValueError("merge_lod_tensor: neither branch has a value")
    tail, dtype = np.asarray(present[0].data).shape[1:], np.asarray(present[0].data).dtype
    for p in present:
        a = np.asarray(p.data)
        if a.ndim == 0 or a.shape[1:] != tail or a.dtype != dtype:
            raise ValueError("merge_lod_tensor: InTrue and InFalse disagree")
    queues, depth = {}, 0
    x_entries = flatten(to_tree(np.asarray(x.data), xlod), level) if len(xlod) > level else None
    for side, v in given.items():
        want = sum(1 for f in mask if f == side)
        if v is None:  # a branch without a value: zeros shaped like X's entries
            picked = [e for e, f in zip(x_entries or [None] * len(mask), mask) if f == side]
            queues[side] = [_zeros_like_tree(e, tail, dtype) if e is not None
                            else np.zeros(tail, dtype) for e in picked]
            if x_entries is not None and picked:
                depth = max(depth, len(xlod) - level)
            continue
        t = _as_tensor(v)
        rows = np.asarray(t.data).shape[0]
        if not t.lod and x_entries is not None and rows != want:
            # A branch without LoD is cut like X's entries on its side when the rows agree.
            mine = [e for e, f in zip(x_entries, mask) if f == side]
            if rows == len(flatten(mine, len(xlod) - level)):
                shaped = from_tree(_zeros_like_tree(mine, tail, dtype), len(xlod) - level,
                                   tail, dtype)
                t = Tensor(np.asarray(t.data), shaped.lod)
        queues[side] = to_tree(np.asarray(t.data), t.lod)
        if len(queues[side]) != want:
            raise ValueError("merge_lod_tensor: a branch does not hold its mask's entries")
        if queues[side]:
            depth = max(depth, len(t.lod or []))
    merged = [queues[f].pop(0) for f in mask]
    out = from_tree(merged, depth, tail, dtype)
    return {"Out": Tensor(out.data, [list(lv) for lv in xlod[:level]] + out.lod)}


def sample_split_lod_tensor(rng, dtype):
    lengths = [2, 0, 3, 1]
    x = rng.standard_normal((sum(lengths), 3)).astype(dtype)
    mask = np.array([[True], [False], [False], [True]])
    lod = [[int(v) for v in np.cumsum([0] + lengths)]]
    return {"X": Tensor(x, lod), "Mask": mask}, {"level": 0}


def sample_merge_lod_tensor(rng, dtype):
    mask = rng.integers(0, 2, (5, 1)).astype(bool)
    k = int(mask.sum())
    return ({"X": mask, "Mask": mask,
             "InTrue": rng.standard_normal((k, 2)).astype(dtype),
             "InFalse": rng.standard_normal((5 - k, 2)).astype(dtype)}, {"level": 0})


REFERENCES = {"split_lod_tensor": split_lod_tensor, "merge_lod_tensor": merge_lod_tensor}
SAMPLES = {"split_lod_tensor": sample_split_lod_tensor,
           "merge_lod_tensor": sample_merge_lod_tensor}
