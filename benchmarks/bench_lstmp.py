"""An LSTMP layer (LSTM with a recurrent projection), forward and backward, beside PyTorch's
nn.LSTM(proj_size=...) in the same run, threads pinned: batch 32, 50 steps, input 128, hidden
256, projection 128, float32, no peepholes, identity projection (PyTorch's cell). Headrace
runs fc (the input projection of every step at once) + dynamic_lstmp over 32 LoD sequences of
50 steps, the loss the mean of the projections, and its backward; PyTorch the same layer on
[50, 32, 128], the same loss, ``backward()``. Medians of interleaved runs (the machine may be
shared).

    HEADRACE_BENCH_THREADS=1 python benchmarks/bench_lstmp.py
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import time

import numpy as np

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor

B, T, I, H, P = 32, 50, 128, 256, 128


def headrace_step(x, dtype="float32"):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        xs = layers.data("x", shape=[I], dtype=dtype, lod_level=1)
        proj = layers.fc(xs, size=4 * H)
        r, _ = layers.dynamic_lstmp(proj, 4 * H, P, use_peepholes=False,
                                    proj_activation="identity", dtype=dtype)
        loss = layers.mean(r)
        hr.append_backward(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": create_lod_tensor(x.transpose(1, 0, 2).reshape(-1, I), [[T] * B])}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def torch_step(torch, x):
    torch.manual_seed(1)
    net = torch.nn.LSTM(I, H, proj_size=P)
    xt = torch.from_numpy(x)

    def step():
        net.zero_grad()
        out, _ = net(xt)
        loss = out.mean()
        loss.backward()
        return loss
    return step


def main(rounds=15):
    x = np.random.default_rng(0).standard_normal((T, B, I)).astype(np.float32)
    torch = _bench.torch_or_none()
    fns = {"ours": headrace_step(x), "peer": torch_step(torch, x) if torch else None}
    times = {k: [] for k in fns}
    for fn in fns.values():
        if fn is not None:
            fn()  # warm up: plans, buffers
    for _ in range(rounds):
        for k, fn in fns.items():
            if fn is not None:
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
    ours = float(np.median(times["ours"]))
    peer = float(np.median(times["peer"])) if times["peer"] else None
    _bench.report("lstmp_layer", sizes=dict(batch=B, steps=T, input=I, hidden=H, proj=P),
                  headrace_ms=round(ours * 1e3, 2),
                  torch_ms=round(peer * 1e3, 2) if peer else None,
                  ratio=round(ours / peer, 3) if peer else None, rounds=rounds,
                  statistic="median of interleaved runs")


if __name__ == "__main__":
    main()
