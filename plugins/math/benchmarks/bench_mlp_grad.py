"""Training-step and gradient-kernel speed beside PyTorch eager, one thread.

1. mul_grad on [128, 784] x [784, 256] (both gradients) against torch's matmul backward (the
   same two products, through autograd).
2. The MLP training step: batch 128, 784-256-256-10, relu, softmax cross-entropy, mean, SGD
   (fc layers: mul + elementwise_add(axis=1)), against the same step in PyTorch eager.

    python plugins/math/benchmarks/bench_mlp_grad.py [--threads 1]

Each side runs in a process of its own: the two share glibc's malloc, whose thresholds adapt
to the blocks a process frees, so a torch run beside headrace changes headrace's page faults
(and the other way round). Prints one JSON line. Thread pins are set before NumPy, SciPy's
OpenBLAS or torch load.
"""
import os
import sys

THREADS = "1"
if "--threads" in sys.argv:
    THREADS = sys.argv[sys.argv.index("--threads") + 1]
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = THREADS

import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import headrace as hr  # noqa: E402

BATCH, SIZES = 128, (784, 256, 256, 10)


def best(fn, repeat=7, number=20, warmup=5):
    for _ in range(warmup):
        fn()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        t = min(t, (time.perf_counter() - t0) / number)
    return t


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 784)).astype(np.float32)
    w = rng.standard_normal((784, 256)).astype(np.float32)
    g = rng.standard_normal((BATCH, 256)).astype(np.float32)
    img = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    label = rng.integers(0, SIZES[-1], (BATCH, 1)).astype(np.int64)
    return x, w, g, img, label


def headrace_step():
    """The training program (fc layers: mul + elementwise_add(axis=1), relu), started."""
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        img = hr.layers.data("img", shape=[-1, SIZES[0]], dtype="float32")
        label = hr.layers.data("label", shape=[-1, 1], dtype="int64")
        h = img
        for n in SIZES[1:-1]:
            h = hr.layers.fc(h, size=n, act="relu")
        logits = hr.layers.fc(h, size=SIZES[-1])
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, label))
        hr.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, loss


def headrace_side():
    from headrace_math.kernels.cpu.matmul import MulGrad
    x, w, g, img, label = _data()
    k = MulGrad({"x_num_col_dims": 1, "y_num_col_dims": 1})
    t_grad = min(best(lambda: k(x, w, g)) for _ in range(3))
    main, exe, scope, loss = headrace_step()
    feed = {"img": img, "label": label}

    def step():
        return exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    l0 = float(step()[0][0])
    t_step = min(best(step) for _ in range(3))
    for _ in range(50):     # it learns: 50 more steps on one batch lower the loss
        step()
    return {"mul_grad_us": t_grad * 1e6, "step_ms": t_step * 1e3, "loss_first": l0,
            "loss_after_50": float(step()[0][0])}


def torch_side():
    import torch
    torch.set_num_threads(int(THREADS))
    x, w, g, img, label = _data()
    xt, wt, gt = (torch.tensor(a) for a in (x, w, g))
    xt.requires_grad_(True)
    wt.requires_grad_(True)
    out = xt @ wt

    def matmul_backward():      # matmul's backward only: the graph is kept, grads not summed
        return torch.autograd.grad(out, (xt, wt), gt, retain_graph=True)
    t_grad = min(best(matmul_backward) for _ in range(3))
    layers = [torch.nn.Linear(a, b) for a, b in zip(SIZES[:-1], SIZES[1:])]
    model = torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(),
                                layers[2])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    it, lt = torch.tensor(img), torch.tensor(label[:, 0])
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = lossf(model(it), lt)
        loss.backward()
        opt.step()
        return loss
    t_step = min(best(step) for _ in range(3))
    return {"matmul_backward_us": t_grad * 1e6, "step_ms": t_step * 1e3,
            "version": torch.__version__}


def check_mul_grad():
    """mul_grad's numbers against torch's (in this process; timings are taken apart)."""
    import torch
    from headrace_math.kernels.cpu.matmul import MulGrad
    x, w, g, _, _ = _data()
    dx, dw = MulGrad({"x_num_col_dims": 1, "y_num_col_dims": 1})(x, w, g)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (xt @ wt).backward(torch.tensor(g))
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(dw, wt.grad.numpy(), rtol=1e-3, atol=1e-3)


def _side(name):
    out = subprocess.run([sys.executable, __file__, "--threads", THREADS, "--side", name],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    if "--side" in sys.argv:
        side = sys.argv[sys.argv.index("--side") + 1]
        print(json.dumps(headrace_side() if side == "headrace" else torch_side()))
        return
    check_mul_grad()
    hr_, pt = _side("headrace"), _side("torch")
    figures = {"benchmark": "mlp_grad", "batch": BATCH, "sizes": list(SIZES),
               "threads": THREADS, "torch": pt["version"],
               "mul_grad_us": round(hr_["mul_grad_us"], 1),
               "torch_matmul_backward_us": round(pt["matmul_backward_us"], 1),
               "mul_grad_ratio_to_torch": round(hr_["mul_grad_us"] / pt["matmul_backward_us"], 3),
               "step_ms": round(hr_["step_ms"], 3), "torch_step_ms": round(pt["step_ms"], 3),
               "step_ratio_to_torch": round(hr_["step_ms"] / pt["step_ms"], 3),
               "loss_first": round(hr_["loss_first"], 4),
               "loss_after_50": round(hr_["loss_after_50"], 4),
               "python": platform.python_version(), "machine": platform.machine()}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
