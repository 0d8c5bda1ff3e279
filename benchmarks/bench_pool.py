"""pool2d global average pooling (the ResNet head: [64, 32, 16, 16] float32, NCHW) and its
gradient, the CPU kernels called directly, beside torch's adaptive_avg_pool2d (and its
backward) in the same run. HEADRACE_BENCH_THREADS=1 as the other benchmarks."""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import numpy as np

import headrace  # noqa: F401  (loads the plugins' registry)
from headrace.ops import default_registry

SHAPES = [(64, 32, 16, 16), (1, 32, 16, 16), (32, 256, 7, 7)]


def kernel(op_type, attrs, dtype="float32"):
    opdef = default_registry().get(op_type)
    full = {name: a.default for name, a in opdef.attrs.items()}
    full.update(attrs)
    return default_registry().kernel(op_type, "cpu", dtype).fn(full, None)


def us(fn, number):
    return round(_bench.best_time(fn, 7, number) * 1e6, 2)


def measure(torch, fwd, bwd, x):
    (out,) = fwd(x)
    g = np.ones_like(out)
    number = max(1, 2_000_000 // x.size)
    row = {"shape": list(x.shape), "headrace_fwd_us": us(lambda: fwd(x), number),
           "headrace_bwd_us": us(lambda: bwd(x, out, g), number)}
    if torch is not None:
        tx, tg = torch.from_numpy(x), torch.from_numpy(g)
        f = torch.nn.functional.adaptive_avg_pool2d
        b = torch.ops.aten._adaptive_avg_pool2d_backward
        row["torch_fwd_us"] = us(lambda: f(tx, 1), number)
        row["torch_bwd_us"] = us(lambda: b(tg, tx), number)
        row["ratio_fwd"] = round(row["headrace_fwd_us"] / row["torch_fwd_us"], 2)
        row["ratio_bwd"] = round(row["headrace_bwd_us"] / row["torch_bwd_us"], 2)
    return row


def main():
    torch = _bench.torch_or_none()
    attrs = {"pooling_type": "avg", "ksize": [1, 1], "global_pooling": True}
    fwd, bwd = kernel("pool2d", attrs), kernel("pool2d_grad", attrs)
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        x = rng.standard_normal(shape).astype(np.float32)
        _bench.report("pool2d_global_avg", **measure(torch, fwd, bwd, x))


if __name__ == "__main__":
    main()
