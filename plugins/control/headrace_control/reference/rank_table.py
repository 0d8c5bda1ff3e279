"""lod_rank_table / max_sequence_len / reorder_lod_tensor_by_rank(_grad) in NumPy, over the
nested entries of reference/split_merge.py.

A reference rank table is a :class:`RankTable` (level, coarse_lod, items); the references
that read one accept the kernels' LoDRankTable too (same fields)."""
from collections import namedtuple

import numpy as np

from .split_merge import flatten, from_tree, to_tree

RankTable = namedtuple("RankTable", "level coarse_lod items")


def _tensor(v):
    data = np.asarray(getattr(v, "data", v))
    return data, list(getattr(v, "lod", None) or [])


def lod_rank_table(inputs, attrs):
    data, lod = _tensor(inputs["X"])
    level = attrs.get("level", 0)
    if level >= len(lod):
        raise ValueError("lod_rank_table: X has no such LoD level")
    lengths = [len(e) for e in flatten(to_tree(data, lod), level)]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # sorted() is stable
    items = tuple((i, lengths[i]) for i in order)
    return {"Out": RankTable(level, [list(lv) for lv in lod[:level]], items)}


def max_sequence_len(inputs, attrs):
    items = inputs["RankTable"].items
    return {"Out": np.array([max((n for _, n in items), default=0)], np.int64)}


def _reorder(inputs, order):
    data, lod = _tensor(inputs["X"])
    entries = to_tree(data, lod)
    if len(entries) != len(inputs["RankTable"].items):
        raise ValueError("reorder: one entry of X per sequence of the table")
    return {"Out": from_tree([entries[k] for k in order], len(lod), data.shape[1:], data.dtype)}


def reorder_lod_tensor_by_rank(inputs, attrs):
    return _reorder(inputs, [index for index, _ in inputs["RankTable"].items])


def reorder_lod_tensor_by_rank_grad(inputs, attrs):
    items = inputs["RankTable"].items
    # Position k of the gradient goes back to entry items[k].index.
    where = {index: k for k, (index, _) in enumerate(items)}
    return _reorder(inputs, [where[i] for i in range(len(items))])


REFERENCES = {"lod_rank_table": lod_rank_table, "max_sequence_len": max_sequence_len,
              "reorder_lod_tensor_by_rank": reorder_lod_tensor_by_rank,
              "reorder_lod_tensor_by_rank_grad": reorder_lod_tensor_by_rank_grad}
# No SAMPLES: a rank table cannot be fed, so these frame ops are run by their own tests
# (plugins/control/tests/test_rank_table.py) rather than by the kernel fuzz test.
