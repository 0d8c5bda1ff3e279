"""lod_tensor_to_array / array_to_lod_tensor / shrink_rnn_memory(_grad) in NumPy, over the
nested entries of reference/split_merge.py (sequences as lists of items)."""
import numpy as np

from headrace.runtime.tensor import Tensor

from .split_merge import flatten, from_tree, to_tree


def _tensor(v):
    data = np.asarray(getattr(v, "data", v))
    return data, list(getattr(v, "lod", None) or [])


def lod_tensor_to_array(inputs, attrs):
    table = inputs["RankTable"]
    data, lod = _tensor(inputs["X"])
    seqs = flatten(to_tree(data, lod), table.level)
    ranked = [seqs[index] for index, _ in table.items]
    depth = len(lod) - table.level - 1
    steps = max((len(s) for s in ranked), default=0)
    return {"Out": [from_tree([s[t] for s in ranked if len(s) > t], depth, data.shape[1:],
                              data.dtype) for t in range(steps)]}


def array_to_lod_tensor(inputs, attrs):
    table = inputs["RankTable"]
    steps = [_tensor(e) for e in inputs["X"]]
    if not steps:
        raise ValueError("array_to_lod_tensor: the reference needs at least one step")
    tail, dtype, depth = steps[0][0].shape[1:], steps[0][0].dtype, len(steps[0][1])
    trees = [to_tree(d, lod) for d, lod in steps]
    by_rank = [[trees[s][k] for s in range(n)] for k, (_, n) in enumerate(table.items)]
    original = [seq for _, seq in sorted(zip([i for i, _ in table.items], by_rank),
                                         key=lambda p: p[0])]
    out = from_tree(original, depth + 1, tail, dtype)
    return {"Out": Tensor(out.data, [list(lv) for lv in table.coarse_lod] + out.lod)}


def shrink_rnn_memory(inputs, attrs):
    table = inputs["RankTable"]
    step = int(np.asarray(inputs["I"]).reshape(-1)[0])
    k = sum(1 for _, n in table.items if n > step)
    data, lod = _tensor(inputs["X"])
    entries = to_tree(data, lod)
    if k > len(entries):
        raise ValueError("shrink_rnn_memory: X has fewer entries than running sequences")
    return {"Out": from_tree(entries[:k], len(lod), data.shape[1:], data.dtype)}


def shrink_rnn_memory_grad(inputs, attrs):
    data, lod = _tensor(inputs["X"])
    dout = inputs.get("Out@GRAD")
    dx = np.zeros_like(data)
    if dout is not None:
        g = np.asarray(getattr(dout, "data", dout))
        dx[:g.shape[0]] = g
    return {"X@GRAD": Tensor(dx, lod)}


REFERENCES = {"lod_tensor_to_array": lod_tensor_to_array,
              "array_to_lod_tensor": array_to_lod_tensor,
              "shrink_rnn_memory": shrink_rnn_memory,
              "shrink_rnn_memory_grad": shrink_rnn_memory_grad}
# No SAMPLES: these ops read a rank table, which cannot be fed;
# plugins/control/tests/test_lod_array.py runs them through programs that build one.
