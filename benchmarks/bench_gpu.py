"""Training steps on a GPU: headrace on CUDAPlace(0) beside PyTorch CUDA, same run.

- mlp:   batch 128, 784-256-256-10, relu, softmax cross-entropy, SGD
- lenet: batch 64, 1x28x28, conv5x5(20)+relu+maxpool2, conv5x5(50)+relu+maxpool2, fc500+relu,
         fc10, softmax cross-entropy, SGD
- lstm:  batch 32 sequences of 50 steps, 128 inputs, hidden 256 (layers.lstm: Paddle 3's rnn
         op), mean of the last step's output, SGD

Each step ends in a fetch of the loss (headrace) or ``loss.item()`` (PyTorch): both wait for
the device, so the figures are whole steps. Also reports headrace's device memory after the
warm-up (allocated/reserved by its caching allocator), which must not grow across steps.

    python benchmarks/bench_gpu.py [mlp|lenet|lstm ...]
    python benchmarks/bench_gpu.py --smoke     # tiny shapes, one step each: the script works
                                               # (the CUDA simulator is fine for this)

PyTorch CUDA is the peer when ``torch.cuda.is_available()``; without it the headrace figures
are printed alone. Numba's simulator is refused for timing (its figures mean nothing).
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import sys

import numpy as np

import headrace as hr

SIZES = {"mlp": 128, "lenet": 64, "lstm": 32}
SMOKE = {"mlp": 4, "lenet": 2, "lstm": 2}


def _model(model, x_shape, batch):
    x = hr.layers.data("x", shape=[-1, *x_shape], dtype="float32")
    if model == "mlp":
        h = hr.layers.fc(x, size=256, act="relu")
        h = hr.layers.fc(h, size=256, act="relu")
    elif model == "lenet":
        h = hr.layers.conv2d(x, num_filters=20, filter_size=5, act="relu")
        h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
        h = hr.layers.conv2d(h, num_filters=50, filter_size=5, act="relu")
        h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
        h = hr.layers.fc(h, size=500, act="relu")
    else:
        h0 = hr.layers.fill_constant([1, batch, 256], "float32", 0.0)
        c0 = hr.layers.fill_constant([1, batch, 256], "float32", 0.0)
        out, _, _ = hr.layers.lstm(x, h0, c0, max_len=x_shape[0], hidden_size=256,
                                   num_layers=1)
        return x, hr.layers.mean(out)
    logits = hr.layers.fc(h, size=10)
    y = hr.layers.data("y", shape=[-1, 1], dtype="int64")
    return x, hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, y))


def _shape(model, steps):
    return {"mlp": (784,), "lenet": (1, 28, 28), "lstm": (steps, 128)}[model]


def headrace_step(model, batch, steps=50):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        x, loss = _model(model, _shape(model, steps), batch)
        hr.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe, scope = hr.Executor(hr.CUDAPlace(0)), hr.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((batch, *_shape(model, steps))).astype(np.float32)}
    if model != "lstm":
        feed["y"] = rng.integers(0, 10, (batch, 1)).astype(np.int64)
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def torch_step(torch, model, batch, steps=50):
    nn, dev = torch.nn, torch.device("cuda")
    torch.manual_seed(1)
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                            nn.Linear(256, 10))
    elif model == "lenet":
        net = nn.Sequential(nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
    else:
        net = nn.LSTM(128, 256, batch_first=True)
    net = net.to(dev)
    x = torch.randn(batch, *_shape(model, steps), device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = net(x)[0].mean() if model == "lstm" else loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def bench(model, smoke=False):
    batch = (SMOKE if smoke else SIZES)[model]
    steps = 3 if smoke else 50
    try:
        step = headrace_step(model, batch, steps)
        if smoke:
            (loss,) = step()
            _bench.report(f"gpu_smoke_{model}", batch=batch, loss=float(loss))
            return
        t_hr = _bench.best_time(step, repeat=20, warmup=3)
    except hr.HeadraceError as e:   # an op without a CUDA kernel yet: say which, go on
        _bench.report(f"gpu_train_step_{model}", error=str(e).splitlines()[0])
        return
    figures = {"batch": batch, "headrace_ms": round(t_hr * 1e3, 3),
               "device_allocated_bytes": hr.cuda.memory_allocated(),
               "device_reserved_bytes": hr.cuda.memory_reserved()}
    torch = _bench.torch_or_none()
    if torch is not None and torch.cuda.is_available():
        t_pt = _bench.best_time(torch_step(torch, model, batch, steps), repeat=20, warmup=3)
        figures["torch_cuda_ms"] = round(t_pt * 1e3, 3)
        figures["ratio_headrace_to_torch"] = round(t_hr / t_pt, 3)
    _bench.report(f"gpu_train_step_{model}", **figures)


def main(argv):
    smoke = "--smoke" in argv
    from headrace.devices import cuda
    if cuda.SIMULATOR and not smoke:
        sys.exit("bench_gpu: NUMBA_ENABLE_CUDASIM is set: simulator timings mean nothing "
                 "(use --smoke to check that the script runs)")
    try:
        hr.Executor(hr.CUDAPlace(0))
    except hr.HeadraceError as e:
        sys.exit(f"bench_gpu: {e}")
    for model in [a for a in argv if not a.startswith("-")] or list(SIZES):
        bench(model, smoke)


if __name__ == "__main__":
    main(sys.argv[1:])
