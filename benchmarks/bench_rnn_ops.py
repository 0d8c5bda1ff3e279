"""An LSTM and a GRU layer, forward and backward, beside PyTorch's nn.LSTM / nn.GRU in the
same run, threads pinned: batch 32, 50 steps, input 128, hidden 256, float32.

Headrace runs fc (the input projection of every step at once) + dynamic_lstm / dynamic_gru
over 32 LoD sequences of 50 steps, the loss the mean of the hidden states, and its backward
(append_backward); PyTorch the same layer (projection inside) on [50, 32, 128], the same loss,
``backward()``. The cells differ in detail (Fluid's GRU resets before the product), not in
work. lstm/gru report medians of interleaved runs (ours, then torch's, per round) and the
median of the per-round ratios, by wall time and by the process's CPU time (steadier when
other work shares the cores). Where the CPU has AVX-512 the float32 products (the LSTM's and
GRU's against their weights, and the fc in front) run on the core's packed GEMM
(headrace/kernels/packed_gemm.h), else on BLAS, whose kernels OPENBLAS_CORETYPE may pin.

    HEADRACE_BENCH_THREADS=1 python benchmarks/bench_rnn_ops.py [lstm|gru|rnn_lstm ...]

rnn_lstm: the ``rnn`` op (Paddle 3's, one op for the whole LSTM, input projection inside) on
the time-major [50, 32, 128] beside the same nn.LSTM, timed as lstm/gru.
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import sys

import numpy as np

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor

B, T, I, H = 32, 50, 128, 256


def headrace_step(kind, x):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        xs = layers.data("x", shape=[I], dtype="float32", lod_level=1)
        if kind == "lstm":
            proj = layers.fc(xs, size=4 * H)
            hidden, _ = layers.dynamic_lstm(proj, 4 * H, use_peepholes=False)
        else:
            proj = layers.fc(xs, size=3 * H)
            hidden = layers.dynamic_gru(proj, H)
        loss = layers.mean(hidden)
        hr.append_backward(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": create_lod_tensor(x.transpose(1, 0, 2).reshape(-1, I), [[T] * B])}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def torch_step(torch, kind, x):
    torch.manual_seed(1)
    net = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(I, H)
    xt = torch.from_numpy(x)

    def step():
        net.zero_grad()
        out, _ = net(xt)
        loss = out.mean()
        loss.backward()
        return loss
    return step


def rnn_op_step(x):
    """The rnn op (Paddle 3's, as paddle.nn.LSTM saves it) through layers.rnn_layer on the
    time-major batch [T, B, I], the loss the mean of Out, and its backward."""
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        xs = layers.data("x", shape=[T, B, I], dtype="float32", append_batch_size=False)
        out, _ = layers.rnn_layer(xs, "LSTM", H, time_major=True)
        loss = layers.mean(out)
        hr.append_backward(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    return lambda: exe.run(main, feed={"x": x}, fetch_list=[loss], scope=scope)


def rnn_op_mode(x, torch, rounds=15):
    """rnn_lstm: as lstm/gru, the rnn op beside the same nn.LSTM."""
    fns = {"ours": rnn_op_step(x)}
    if torch is not None:
        fns["peer"] = torch_step(torch, "lstm", x)
    interleaved("rnn_lstm_op", fns, rounds)


def layer_mode(kind, x, torch, rounds=15):
    """lstm/gru: fc + dynamic_lstm / dynamic_gru beside nn.LSTM / nn.GRU."""
    fns = {"ours": headrace_step(kind, x)}
    if torch is not None:
        fns["peer"] = torch_step(torch, kind, x)
    interleaved(f"{kind}_layer", fns, rounds)


def interleaved(name, fns, rounds):
    """Interleaved rounds (ours, then torch's), medians (wall and CPU time) and the median
    per-round ratios, as the machine may be shared."""
    wall, cpu = _bench.interleaved(fns, rounds)
    figures = {"headrace_ms": round(float(np.median(wall["ours"])) * 1e3, 2)}
    if "peer" in fns:
        figures.update(
            torch_ms=round(float(np.median(wall["peer"])) * 1e3, 2),
            ratio=round(float(np.median(np.divide(wall["ours"], wall["peer"]))), 3),
            headrace_cpu_ms=round(float(np.median(cpu["ours"])) * 1e3, 2),
            torch_cpu_ms=round(float(np.median(cpu["peer"])) * 1e3, 2),
            ratio_cpu=round(float(np.median(np.divide(cpu["ours"], cpu["peer"]))), 3))
    _bench.report(name, sizes=dict(batch=B, steps=T, input=I, hidden=H), **figures,
                  rounds=rounds, statistic="medians of interleaved runs")


def main(kinds):
    x = np.random.default_rng(0).standard_normal((T, B, I)).astype(np.float32)
    torch = _bench.torch_or_none()
    for kind in kinds:
        if kind == "rnn_lstm":
            rnn_op_mode(x, torch)
            continue
        layer_mode(kind, x, torch)


if __name__ == "__main__":
    main(sys.argv[1:] or ["lstm", "gru"])
