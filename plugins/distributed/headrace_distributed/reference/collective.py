"""References of the collective ops, written over every rank's inputs.

``*_ranks`` functions take the list of each rank's X and return each rank's Out; the
multi-rank tests compare the kernels run under mpiexec with them. ``REFERENCES`` are the
same functions on a one-rank world (what the in-process tests can run).
"""
import numpy as np

REDUCERS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def allreduce_ranks(xs, kind):
    out = xs[0].copy()
    for x in xs[1:]:
        out = REDUCERS[kind](out, x)
    return [out.astype(xs[0].dtype) for _ in xs]


def broadcast_ranks(xs, root):
    return [xs[root].copy() for _ in xs]


def allgather_ranks(xs):
    return [np.concatenate(xs, axis=0) for _ in xs]


def reducescatter_ranks(xs):
    total = allreduce_ranks(xs, "sum")[0]
    return list(np.split(total, len(xs), axis=0))


def _one_rank(fn):
    return lambda inputs, attrs: {"Out": fn([inputs["X"]], attrs)[0]}


REFERENCES = {
    **{f"c_allreduce_{k}": _one_rank(lambda xs, a, k=k: allreduce_ranks(xs, k))
       for k in REDUCERS},
    "c_identity": _one_rank(lambda xs, a: [x.copy() for x in xs]),
    "c_broadcast": _one_rank(lambda xs, a: broadcast_ranks(xs, a.get("root", 0))),
    "c_allgather": _one_rank(lambda xs, a: allgather_ranks(xs)),
    "c_reducescatter": _one_rank(lambda xs, a: reducescatter_ranks(xs)),
    "barrier": _one_rank(lambda xs, a: [x.copy() for x in xs]),
}


def sample_x(rng, dtype, shape=(4, 3)):
    if dtype.startswith("int"):
        return {"X": rng.integers(-5, 6, shape).astype(dtype)}, {}
    return {"X": rng.standard_normal(shape).astype(dtype)}, {}


SAMPLES = {op_type: sample_x for op_type in REFERENCES}
