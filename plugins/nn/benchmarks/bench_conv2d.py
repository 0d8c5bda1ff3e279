"""conv2d, the LeNet-5 second layer: 64 images, 20 -> 50 channels, 12x12, 5x5 filters.

Times the CPU kernel alone and through the Executor, beside a plain NumPy im2col (a strided
window view and one matmul) and, when installed, torch.nn.functional.conv2d. Threads are pinned
(HEADRACE_BENCH_THREADS, default 1) before NumPy loads. Prints one JSON line per dtype.

    python plugins/nn/benchmarks/bench_conv2d.py
"""
import json
import os
import time

THREADS = os.environ.get("HEADRACE_BENCH_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = THREADS

import numpy as np  # noqa: E402

import headrace as hr  # noqa: E402
from headrace.ops import default_registry  # noqa: E402

N, C, M, H, W, K = 64, 20, 50, 12, 12, 5


def best_ms(fn, repeat=30):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return round(best * 1e3, 3)


def numpy_im2col(x, w):
    win = np.lib.stride_tricks.sliding_window_view(x, (K, K), axis=(2, 3))  # N C Ho Wo K K
    ho, wo = win.shape[2:4]
    col = win.transpose(0, 2, 3, 1, 4, 5).reshape(N * ho * wo, C * K * K)
    return (col @ w.reshape(M, -1).T).reshape(N, ho, wo, M).transpose(0, 3, 1, 2)


def main():
    rng = np.random.default_rng(0)
    for dtype in ("float32", "float64"):
        x = rng.standard_normal((N, C, H, W)).astype(dtype)
        w = rng.standard_normal((M, C, K, K)).astype(dtype)
        kernel = default_registry().kernel("conv2d", "cpu", dtype).fn(
            {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
             "data_format": "NCHW", "padding_algorithm": "EXPLICIT"}, None)
        prog = hr.Program()
        blk = prog.global_block()
        xv = blk.create_var(name="x", shape=[N, C, H, W], dtype=dtype, need_check_feed=True)
        wv = blk.create_var(name="w", shape=[M, C, K, K], dtype=dtype, need_check_feed=True)
        out = blk.append_op("conv2d", {"Input": xv, "Filter": wv},
                            {"Output": "y"}).output("Output")[0]
        exe, scope, feed = hr.Executor(), hr.Scope(), {"x": x, "w": w}
        np.testing.assert_allclose(kernel(x, w)[0], numpy_im2col(x, w), rtol=1e-3, atol=1e-3)
        figures = {"benchmark": "conv2d_lenet2", "dtype": dtype, "threads": THREADS,
                   "kernel_ms": best_ms(lambda: kernel(x, w)),
                   "executor_ms": best_ms(lambda: exe.run(prog, feed=feed, fetch_list=[out],
                                                          scope=scope)),
                   "numpy_im2col_ms": best_ms(lambda: numpy_im2col(x, w))}
        try:
            import torch
            import torch.nn.functional as F
        except ImportError:
            torch = None
        if torch is not None:
            torch.set_num_threads(int(THREADS))
            tx, tw = torch.from_numpy(x), torch.from_numpy(w)
            with torch.no_grad():
                figures["torch_ms"] = best_ms(lambda: F.conv2d(tx, tw))
        print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
