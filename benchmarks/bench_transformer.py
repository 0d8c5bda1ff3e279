"""A transformer encoder block training step beside PyTorch eager, same sizes, same run,
threads pinned: batch 32, 64 tokens, width 256, 4 heads, a 1024-wide gelu feed-forward,
post-norm (layer_norm after each residual), mean-of-squares loss, SGD, float32.

Headrace builds the block from layers (fc, reshape/transpose, matmul, softmax, layer_norm,
gelu); PyTorch from the same pieces (nn.Linear, reshape/transpose, matmul, softmax,
nn.LayerNorm, gelu) in eager mode.

The steps are timed in interleaved rounds (ours, then torch's, per round): the medians by wall
time and by the process's CPU time, and the medians of the per-round ratios, so that load from
other work on the machine falls on both sides alike; best_ms: the fastest step of each.

    HEADRACE_BENCH_THREADS=1 python benchmarks/bench_transformer.py
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import math

import numpy as np

import headrace as hr
from headrace import layers

B, L, W, H = 32, 64, 256, 4


def headrace_step(x):
    dk = W // H
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        xs = layers.data("x", shape=[L, W], dtype="float32")

        def split(t):
            return layers.transpose(layers.reshape(t, [0, 0, H, dk]), [0, 2, 1, 3])
        q, k, v = (split(layers.fc(xs, size=W, num_flatten_dims=2)) for _ in range(3))
        att = layers.softmax(layers.matmul(q, k, transpose_y=True, alpha=1 / math.sqrt(dk)))
        ctx = layers.reshape(layers.transpose(layers.matmul(att, v), [0, 2, 1, 3]), [0, 0, W])
        h = layers.layer_norm(layers.elementwise_add(
            xs, layers.fc(ctx, size=W, num_flatten_dims=2)), begin_norm_axis=2)
        ff = layers.fc(layers.gelu(layers.fc(h, size=4 * W, num_flatten_dims=2)), size=W,
                       num_flatten_dims=2)
        out = layers.layer_norm(layers.elementwise_add(h, ff), begin_norm_axis=2)
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    return lambda: exe.run(main, feed={"x": x}, fetch_list=[loss], scope=scope)


def torch_step(torch, x):
    nn = torch.nn
    torch.manual_seed(1)
    dk = W // H
    q, k, v, o = (nn.Linear(W, W) for _ in range(4))
    f1, f2 = nn.Linear(W, 4 * W), nn.Linear(4 * W, W)
    n1, n2 = nn.LayerNorm(W), nn.LayerNorm(W)
    params = [p for m in (q, k, v, o, f1, f2, n1, n2) for p in m.parameters()]
    opt = torch.optim.SGD(params, lr=0.01)
    xt = torch.from_numpy(x)

    def split(t):
        return t.reshape(B, L, H, dk).transpose(1, 2)

    def step():
        opt.zero_grad()
        att = torch.softmax(split(q(xt)) @ split(k(xt)).transpose(-1, -2) / math.sqrt(dk), -1)
        ctx = (att @ split(v(xt))).transpose(1, 2).reshape(B, L, W)
        h = n1(xt + o(ctx))
        out = n2(h + f2(torch.nn.functional.gelu(f1(h))))
        loss = (out * out).mean()
        loss.backward()
        opt.step()
        return loss
    return step


def main(rounds=20):
    x = np.random.default_rng(0).standard_normal((B, L, W)).astype(np.float32)
    torch = _bench.torch_or_none()
    fns = {"ours": headrace_step(x)}
    if torch is not None:
        fns["peer"] = torch_step(torch, x)
    wall, cpu = _bench.interleaved(fns, rounds)

    def ms(v):
        return round(float(v) * 1e3, 2)
    figures = {"headrace_ms": ms(np.median(wall["ours"])),
               "headrace_cpu_ms": ms(np.median(cpu["ours"]))}
    best = {"headrace": ms(min(wall["ours"]))}
    if torch is not None:
        figures.update(
            torch_ms=ms(np.median(wall["peer"])), torch_cpu_ms=ms(np.median(cpu["peer"])),
            ratio=round(float(np.median(np.divide(wall["ours"], wall["peer"]))), 3),
            ratio_cpu=round(float(np.median(np.divide(cpu["ours"], cpu["peer"]))), 3))
        best["torch"] = ms(min(wall["peer"]))
    _bench.report("transformer_block", sizes=dict(batch=B, tokens=L, width=W, heads=H),
                  **figures, best_ms=best, rounds=rounds,
                  statistic="medians of interleaved runs")


if __name__ == "__main__":
    main()
