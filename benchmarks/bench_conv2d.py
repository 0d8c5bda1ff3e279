"""conv2d forward, LeNet's second layer: batch 64, 20 -> 50 channels, 12x12, 5x5 filters.

Milliseconds per call through the Executor (feed, kernel, fetch copy) beside
torch.nn.functional.conv2d in the same run, and a plain NumPy im2col (a window view and one
matmul) as a floor any peer-less machine can compare against.
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import numpy as np

import headrace as hr

N, C, M, H, W, K = 64, 20, 50, 12, 12, 5


def numpy_im2col(x, w):
    win = np.lib.stride_tricks.sliding_window_view(x, (K, K), axis=(2, 3))  # N C Ho Wo K K
    ho, wo = win.shape[2:4]
    col = win.transpose(0, 2, 3, 1, 4, 5).reshape(N * ho * wo, C * K * K)
    return (col @ w.reshape(M, -1).T).reshape(N, ho, wo, M).transpose(0, 3, 1, 2)


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C, K, K)).astype(np.float32)
    prog = hr.Program()
    blk = prog.global_block()
    xv = blk.create_var(name="x", shape=[N, C, H, W], dtype="float32", need_check_feed=True)
    wv = blk.create_var(name="w", shape=[M, C, K, K], dtype="float32", need_check_feed=True)
    out = blk.append_op("conv2d", {"Input": xv, "Filter": wv}, {"Output": "y"}).output("Output")[0]
    exe, scope, feed = hr.Executor(), hr.Scope(), {"x": x, "w": w}
    run = lambda: exe.run(prog, feed=feed, fetch_list=[out], scope=scope)  # noqa: E731
    np.testing.assert_allclose(run()[0], numpy_im2col(x, w), rtol=1e-3, atol=1e-3)
    t_hr = _bench.best_time(run, repeat=30)
    figures = {"shape": [N, C, H, W], "filter": [M, C, K, K],
               "headrace_ms": round(t_hr * 1e3, 3),
               "numpy_im2col_ms": round(_bench.best_time(lambda: numpy_im2col(x, w),
                                                         repeat=30) * 1e3, 3)}
    torch = _bench.torch_or_none()
    if torch is not None:
        import torch.nn.functional as F
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        with torch.no_grad():
            t_pt = _bench.best_time(lambda: F.conv2d(tx, tw), repeat=30)
        figures["torch_ms"] = round(t_pt * 1e3, 3)
        figures["ratio_headrace_to_torch"] = round(t_hr / t_pt, 3)
    _bench.report("conv2d_lenet_layer2", **figures)


if __name__ == "__main__":
    main()
