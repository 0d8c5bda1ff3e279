"""GEMM through the `mul` op: 1024x1024 @ 1024x1024 float32, GFLOP/s beside numpy.matmul."""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import numpy as np

import headrace as hr

N = 1024


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((N, N)).astype(np.float32)
    bm = rng.standard_normal((N, N)).astype(np.float32)
    prog = hr.Program()
    blk = prog.global_block()
    x = blk.create_var(name="x", shape=[N, N], dtype="float32", need_check_feed=True)
    y = blk.create_var(name="y", shape=[N, N], dtype="float32", need_check_feed=True)
    out = blk.append_op("mul", {"X": x, "Y": y}, {"Out": "out"}).output("Out")[0]
    exe, scope, feed = hr.Executor(), hr.Scope(), {"x": a, "y": bm}
    flop = 2.0 * N ** 3
    run = lambda: exe.run(prog, feed=feed, fetch_list=[out], scope=scope)  # noqa: E731
    mm = lambda: np.matmul(a, bm)  # noqa: E731
    # Interleave the two, best of several, so both see the same machine state.
    t_hr = t_np = float("inf")
    for _ in range(3):
        t_hr = min(t_hr, _bench.best_time(run, repeat=3))
        t_np = min(t_np, _bench.best_time(mm, repeat=3))
    np.testing.assert_allclose(run()[0], mm(), rtol=1e-3, atol=1e-3)
    figures = {"n": N, "headrace_gflops": round(flop / t_hr / 1e9, 2),
               "numpy_gflops": round(flop / t_np / 1e9, 2),
               "ratio_headrace_to_numpy": round(t_np / t_hr, 3)}
    torch = _bench.torch_or_none()
    if torch is not None:
        at, bt = torch.from_numpy(a), torch.from_numpy(bm)
        t_pt = _bench.best_time(lambda: torch.mm(at, bt), repeat=5)
        figures["torch_gflops"] = round(flop / t_pt / 1e9, 2)
    _bench.report("gemm_mul", **figures)


if __name__ == "__main__":
    main()
