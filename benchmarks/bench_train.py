"""Training steps beside PyTorch eager, same data, same run, threads pinned.

- mlp:   batch 128, 784-256-256-10, relu, softmax cross-entropy, SGD
- lenet: batch 64, 1x28x28, conv5x5(20)+relu+maxpool2, conv5x5(50)+relu+maxpool2, fc500+relu,
         fc10, softmax cross-entropy, SGD
- build: building a 200-layer fc network and its minimize (backward + SGD ops), ms

    HEADRACE_BENCH_THREADS=1 python benchmarks/bench_train.py [mlp|lenet|build ...]
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import sys
import time

import numpy as np

import headrace as hr


def build(model, batch):
    """``(main, startup, loss, feed)`` of the model, before minimize (bench_distributed.py
    rewrites the same LeNet for data parallelism)."""
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        if model == "mlp":
            x = hr.layers.data("x", shape=[-1, 784], dtype="float32")
            h = hr.layers.fc(x, size=256, act="relu")
            h = hr.layers.fc(h, size=256, act="relu")
        else:
            x = hr.layers.data("x", shape=[-1, 1, 28, 28], dtype="float32")
            h = hr.layers.conv2d(x, num_filters=20, filter_size=5, act="relu")
            h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
            h = hr.layers.conv2d(h, num_filters=50, filter_size=5, act="relu")
            h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
            h = hr.layers.fc(h, size=500, act="relu")
        logits = hr.layers.fc(h, size=10)
        y = hr.layers.data("y", shape=[-1, 1], dtype="int64")
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, y))
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch,) + tuple(x.shape[1:])).astype(np.float32)
    ys = rng.integers(0, 10, (batch, 1)).astype(np.int64)
    return main, startup, loss, {"x": xs, "y": ys}


def headrace_step(model, batch):
    main, startup, loss, feed = build(model, batch)
    with hr.program_guard(main, startup):
        hr.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def torch_step(torch, model, batch):
    nn = torch.nn
    torch.manual_seed(1)
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                            nn.Linear(256, 10))
        x = torch.randn(batch, 784)
    else:
        net = nn.Sequential(nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
        x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    return _bench.torch_train_step(torch, net, opt, x, y)


def bench_step(model, batch):
    figures = {"batch": batch}
    if _bench.runs("headrace"):
        t_hr = _bench.best_time(headrace_step(model, batch), repeat=20, warmup=3)
        figures["headrace_ms"] = round(t_hr * 1e3, 3)
    torch = _bench.torch_or_none()
    if torch is not None:
        t_pt = _bench.best_time(torch_step(torch, model, batch), repeat=20, warmup=3)
        figures["torch_eager_ms"] = round(t_pt * 1e3, 3)
        if "headrace_ms" in figures:
            figures["ratio_headrace_to_torch"] = round(t_hr / t_pt, 3)
    _bench.report(f"train_step_{model}", **figures)


def bench_build(layers=200, width=64):
    def build():
        main, startup = hr.Program(), hr.Program()
        with hr.program_guard(main, startup):
            h = hr.layers.data("x", shape=[-1, width], dtype="float32")
            for _ in range(layers):
                h = hr.layers.fc(h, size=width, act="relu")
            loss = hr.layers.mean(h)
            t0 = time.perf_counter()
            hr.optimizer.SGD(learning_rate=0.01).minimize(loss)
            return time.perf_counter() - t0, main
    t0 = time.perf_counter()
    t_min, main = build()
    total = time.perf_counter() - t0
    _bench.report("build_and_minimize_fc200", layers=layers,
                  ops=len(main.global_block().ops), total_ms=round(total * 1e3, 1),
                  build_ms=round((total - t_min) * 1e3, 1), minimize_ms=round(t_min * 1e3, 1))


if __name__ == "__main__":
    wanted = sys.argv[1:] or ["mlp", "lenet", "build"]
    if "mlp" in wanted:
        bench_step("mlp", 128)
    if "lenet" in wanted:
        bench_step("lenet", 64)
    if "build" in wanted:
        bench_build()
