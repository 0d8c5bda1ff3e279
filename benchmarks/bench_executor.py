"""Executor overhead: a 1000-op chain of tiny `scale` and `elementwise_add` ops.

Reports microseconds per op for headrace (whole Executor.run / ops), NumPy (the same chain as
NumPy calls) and PyTorch eager (the same chain as torch calls), all in this run.
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import numpy as np

import headrace as hr

N_OPS, SHAPE = 1000, (4,)


def build():
    prog = hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=SHAPE, dtype="float32", need_check_feed=True)
    v = x
    for i in range(N_OPS // 2):
        s = b.append_op("scale", {"X": v}, {"Out": f"s{i}"}, {"scale": 0.5}).output("Out")[0]
        v = b.append_op("elementwise_add", {"X": s, "Y": x}, {"Out": f"a{i}"}).output("Out")[0]
    return prog, v


def main():
    prog, out = build()
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    xv = np.ones(SHAPE, np.float32)
    feed = {"x": xv}
    t_hr = _bench.best_time(lambda: exe.run(prog, feed=feed, fetch_list=[out], scope=scope),
                            repeat=20)

    def numpy_chain():
        v = xv
        for _ in range(N_OPS // 2):
            v = np.add(np.multiply(v, np.float32(0.5)), xv)
        return v
    t_np = _bench.best_time(numpy_chain, repeat=20)
    figures = {"ops": N_OPS, "shape": list(SHAPE),
               "headrace_us_per_op": round(t_hr / N_OPS * 1e6, 3),
               "numpy_us_per_call": round(t_np / N_OPS * 1e6, 3)}
    torch = _bench.torch_or_none()
    if torch is not None:
        xt = torch.ones(SHAPE)

        def torch_chain():
            v = xt
            for _ in range(N_OPS // 2):
                v = torch.add(torch.mul(v, 0.5), xt)
            return v
        t_pt = _bench.best_time(torch_chain, repeat=20)
        figures["torch_eager_us_per_op"] = round(t_pt / N_OPS * 1e6, 3)
        figures["ratio_headrace_to_torch"] = round(t_hr / t_pt, 3)
    np.testing.assert_allclose(exe.run(prog, feed=feed, fetch_list=[out], scope=scope)[0],
                               numpy_chain(), rtol=1e-5)
    _bench.report("executor_overhead", **figures)


if __name__ == "__main__":
    main()
