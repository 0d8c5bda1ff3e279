"""Elementwise add of 10M float32: effective GB/s (two reads, one write) beside NumPy."""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import numpy as np

import headrace as hr

N = 10_000_000


def main():
    rng = np.random.default_rng(0)
    a, b = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
    prog = hr.Program()
    blk = prog.global_block()
    x = blk.create_var(name="x", shape=[N], dtype="float32", need_check_feed=True)
    y = blk.create_var(name="y", shape=[N], dtype="float32", need_check_feed=True)
    out = blk.append_op("elementwise_add", {"X": x, "Y": y}, {"Out": "out"}).output("Out")[0]
    exe, scope = hr.Executor(), hr.Scope()
    # The fetch copies the result to the caller, so time the executor's own plan run as well.
    rp = exe._run_plan(prog, ("x", "y"), ("out",), False)
    slots = {feed[0]: feed[1] for feed in rp.feeds}     # (name, slot, ...)

    def kernel_only():
        values = [None] * rp.nslots
        values[slots["x"]], values[slots["y"]] = a, b
        rp.plan.run(values, {})
    t_run = _bench.best_time(kernel_only, repeat=10)
    t_fetch = _bench.best_time(lambda: exe.run(prog, feed={"x": a, "y": b}, fetch_list=[out],
                                               scope=scope), repeat=10)
    t_np = _bench.best_time(lambda: np.add(a, b), repeat=10)
    gb = 3 * N * 4 / 1e9
    _bench.report("elementwise_add_10M", n=N,
                  headrace_gbps=round(gb / t_run, 2), numpy_gbps=round(gb / t_np, 2),
                  ratio_headrace_to_numpy=round(t_np / t_run, 3),
                  headrace_with_fetch_copy_gbps=round(gb / t_fetch, 2))


if __name__ == "__main__":
    main()
