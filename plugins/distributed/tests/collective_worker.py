"""Every collective op and sync_batch_norm on every rank, against the references written over
all ranks' inputs (run under ``headrace launch -n N``; a mismatch raises, which aborts the job
naming the rank). Every rank draws every rank's inputs from one seed and keeps its own."""
import sys

import numpy as np

import headrace_distributed as dist
from headrace.testing.optest import IN_PLACE_OUTPUTS, run_op
from headrace_distributed.reference import collective as ref
from headrace_distributed.reference import sync_batch_norm as bn_ref


def _out(op_type, inputs, attrs=None, slots=("Out",), same_var=None):
    got = run_op(op_type, inputs, list(slots), attrs or {}, same_var=same_var)
    return {s: got[s][0].numpy() for s in slots}


def check_collectives(env, dtype):
    rng = np.random.default_rng(11)
    shape = (2 * env.world_size, 3)
    xs = [(rng.integers(1, 4, shape) if dtype.startswith("int")
           else rng.standard_normal(shape)).astype(dtype) for _ in range(env.world_size)]
    x = {"X": xs[env.rank]}
    exact = dtype.startswith("int")
    cases = [(f"c_allreduce_{k}", {}, ref.allreduce_ranks(xs, k)) for k in ref.REDUCERS]
    root = env.world_size - 1
    cases += [("c_broadcast", {"root": root}, ref.broadcast_ranks(xs, root)),
              ("c_allgather", {"nranks": env.world_size}, ref.allgather_ranks(xs)),
              ("c_reducescatter", {"nranks": env.world_size}, ref.reducescatter_ranks(xs)),
              ("barrier", {}, xs)]
    for op_type, attrs, expected in cases:
        got = _out(op_type, x, attrs)["Out"]
        want = expected[env.rank]
        assert got.dtype == want.dtype and got.shape == want.shape, (op_type, got, want)
        if exact:
            np.testing.assert_array_equal(got, want, err_msg=op_type)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=op_type)


def check_sync_batch_norm(env):
    rng = np.random.default_rng(5)
    c = 3
    # Ranks with different batch sizes: the statistics weigh every sample alike.
    xs = [rng.standard_normal((2 + r, c, 2, 2)) * 2 + 1 for r in range(env.world_size)]
    dys = [rng.standard_normal(x.shape) for x in xs]
    stats = {"Scale": rng.random(c) + 0.5, "Bias": rng.standard_normal(c),
             "Mean": rng.standard_normal(c), "Variance": rng.random(c) + 0.5}
    attrs = {"momentum": 0.8, "epsilon": 1e-5}
    full = {a: v for a, v in zip(("is_test", "momentum", "epsilon", "data_layout",
                                  "use_global_stats", "trainable_statistics"),
                                 (False, 0.8, 1e-5, "NCHW", False, False))}
    want = bn_ref.sync_batch_norm_ranks(stats, xs, full)[env.rank]
    slots = ("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance")
    got = _out("sync_batch_norm", {"X": xs[env.rank], **{k: v.copy() for k, v in stats.items()}},
               attrs, slots, same_var=IN_PLACE_OUTPUTS["batch_norm"])
    for s in slots:
        np.testing.assert_allclose(got[s], want[s], rtol=1e-10, atol=1e-12, err_msg=s)
    saved = {"SavedMean": want["SavedMean"], "SavedVariance": want["SavedVariance"]}
    want_g = bn_ref.sync_batch_norm_grad_ranks({**stats, **saved}, xs, dys, full)[env.rank]
    gslots = ("X@GRAD", "Scale@GRAD", "Bias@GRAD")
    got_g = _out("sync_batch_norm_grad", {"X": xs[env.rank], **stats, **saved,
                                          "Y@GRAD": dys[env.rank]}, attrs, gslots)
    for s in gslots:
        np.testing.assert_allclose(got_g[s], want_g[s], rtol=1e-10, atol=1e-12, err_msg=s)


def main():
    env = dist.init()
    for dtype in ("float32", "float64", "int64"):
        check_collectives(env, dtype)
    check_sync_batch_norm(env)
    print(f"rank {env.rank}: ok")


if __name__ == "__main__":
    sys.exit(main())
