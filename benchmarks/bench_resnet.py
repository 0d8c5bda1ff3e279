"""Small ResNet training step beside PyTorch eager: same network, same data, one process.

3x32x32 input, batch 32: conv3x3(16)+batch_norm+relu, two residual blocks at 16 channels
(conv3x3+bn+relu, conv3x3+bn, + shortcut, relu), a stride-2 block to 32 channels (1x1 conv +
bn shortcut), global average pool, fc10, softmax cross-entropy, Momentum(0.01, 0.9). The two
steps take turns (interleaved rounds), so the machine's load falls on both alike; the figure
is the median over rounds of the per-step time, and the ratio is headrace / PyTorch. Beside
wall time, the calling thread's CPU time (one thread: all of each framework's work), which
other people's load on a shared machine inflates far less than wall time.

    HEADRACE_BENCH_THREADS=1 python benchmarks/bench_resnet.py [--batch 32] [--rounds 15]

Two threads, each framework alone in its process (HEADRACE_BENCH_ONLY; CPU time then counts
the calling thread only, so compare wall times):

    HEADRACE_BENCH_THREADS=2 HEADRACE_BENCH_ONLY=headrace python benchmarks/bench_resnet.py
    HEADRACE_BENCH_THREADS=2 HEADRACE_BENCH_ONLY=torch python benchmarks/bench_resnet.py
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import sys

import numpy as np

import headrace as hr


def _block(x, channels, stride):
    layers = hr.layers
    h = layers.batch_norm(layers.conv2d(x, channels, 3, stride=stride, padding=1,
                                        bias_attr=False), act="relu")
    h = layers.batch_norm(layers.conv2d(h, channels, 3, padding=1, bias_attr=False))
    short = x
    if stride != 1 or x.shape[1] != channels:
        short = layers.batch_norm(layers.conv2d(x, channels, 1, stride=stride,
                                                bias_attr=False))
    return layers.relu(layers.elementwise_add(h, short))


def network():
    """The logits of the network on a new data variable ``x`` [-1, 3, 32, 32], in the
    current program (bench_inference.py runs the same network)."""
    x = hr.layers.data("x", shape=[-1, 3, 32, 32], dtype="float32")
    h = hr.layers.batch_norm(hr.layers.conv2d(x, 16, 3, padding=1, bias_attr=False),
                             act="relu")
    h = _block(h, 16, 1)
    h = _block(h, 16, 1)
    h = _block(h, 32, 2)
    h = hr.layers.pool2d(h, pool_type="avg", global_pooling=True)
    return hr.layers.fc(h, size=10)


def headrace_step(xs, ys):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        logits = network()
        y = hr.layers.data("y", shape=[-1, 1], dtype="int64")
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, y))
        hr.optimizer.Momentum(learning_rate=0.01, momentum=0.9).minimize(loss)
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": xs, "y": ys}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def torch_step(torch, xs, ys):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                           nn.BatchNorm2d(cout))

        def forward(self, x):
            h = torch.relu(self.b1(self.c1(x)))
            h = self.b2(self.c2(h))
            return torch.relu(h + (x if self.short is None else self.short(x)))

    torch.manual_seed(1)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                        Block(16, 16, 1), Block(16, 16, 1), Block(16, 32, 2),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    net.train()
    x, y = torch.from_numpy(xs), torch.from_numpy(ys[:, 0])
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    return _bench.torch_train_step(torch, net, opt, x, y)


def bench(batch, rounds):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
    ys = rng.integers(0, 10, (batch, 1)).astype(np.int64)
    runs = {"headrace": headrace_step(xs, ys)} if _bench.runs("headrace") else {}
    torch = _bench.torch_or_none()
    if torch is not None:
        runs["torch"] = torch_step(torch, xs, ys)
    wall, cpu = _bench.interleaved(runs, rounds=rounds, number=2, warmup=3)
    med, cpu = _bench.medians(wall), _bench.medians(cpu)
    figures = {"batch": batch, "rounds": rounds}
    if "headrace" in runs:
        figures["headrace_ms"] = round(med["headrace"] * 1e3, 2)
        figures["headrace_cpu_ms"] = round(cpu["headrace"] * 1e3, 2)
    if torch is not None:
        figures["torch_eager_ms"] = round(med["torch"] * 1e3, 2)
        figures["torch_eager_cpu_ms"] = round(cpu["torch"] * 1e3, 2)
    if len(runs) == 2:
        figures["ratio_headrace_to_torch"] = round(med["headrace"] / med["torch"], 3)
        figures["ratio_cpu"] = round(cpu["headrace"] / cpu["torch"], 3)
    _bench.report("train_step_resnet", **figures)


if __name__ == "__main__":
    args = sys.argv[1:]
    opts = {"--batch": 32, "--rounds": 15}
    for key in opts:
        if key in args:
            opts[key] = int(args[args.index(key) + 1])
    bench(opts["--batch"], opts["--rounds"])
