"""The DataLoader's cost, beside PyTorch's DataLoader and beside slicing arrays by hand.

- pass:  one shuffled pass over the 1437 training digits (1x8x8 float32, int64 label) in
         batches of 32, nothing else: hr.io.DataLoader (a sample generator, the background
         thread, checks and stacking per sample) against torch.utils.data.DataLoader
         (TensorDataset, shuffle, num_workers=0: per-sample indexing and collate), ms
- train: one epoch of the demo's CNN on those batches, fed by the DataLoader against fed by
         slicing the arrays by hand (the loop's whole cost, so the ratio is the loader's
         overhead in a real step; the prefetch thread should hide the conversions), ms

    HEADRACE_BENCH_THREADS=1 python benchmarks/bench_dataloader.py [pass|train ...]
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import sys

import numpy as np

import headrace as hr
from headrace.demo import build, load_digits

BATCH = 32


def digits_loader(img, label, x, y):
    loader = hr.io.DataLoader.from_generator(feed_list=[img, label], capacity=8)
    loader.set_sample_generator(
        hr.io.reader.shuffle(hr.io.reader.from_arrays(x, y), buf_size=len(x), seed=0),
        batch_size=BATCH, drop_last=False)
    return loader


def sliced_by_hand(x, y, rng):
    """The peer: a permutation, then each batch's rows indexed out of the arrays."""
    order = rng.permutation(len(x))
    for i in range(0, len(x), BATCH):
        b = order[i:i + BATCH]
        yield {"img": x[b], "label": y[b]}


def bench_pass():
    x, y, _, _ = load_digits()
    main, *_ = build()
    loader = digits_loader(main.global_block().var("img"), main.global_block().var("label"),
                           x, y)
    t_hr = _bench.best_time(lambda: sum(1 for _ in loader()), repeat=10)
    rng = np.random.default_rng(0)
    t_hand = _bench.best_time(lambda: sum(1 for _ in sliced_by_hand(x, y, rng)), repeat=10)
    figures = {"samples": len(x), "batch": BATCH, "headrace_ms": round(t_hr * 1e3, 3),
               "by_hand_ms": round(t_hand * 1e3, 3)}
    torch = _bench.torch_or_none()
    if torch is not None:
        from torch.utils.data import DataLoader, TensorDataset
        torch.manual_seed(0)
        pt = DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                        batch_size=BATCH, shuffle=True, num_workers=0)
        t_pt = _bench.best_time(lambda: sum(1 for _ in pt), repeat=10)
        figures["torch_ms"] = round(t_pt * 1e3, 3)
        figures["ratio_headrace_to_torch"] = round(t_hr / t_pt, 3)
    _bench.report("dataloader_pass_digits", **figures)


def bench_train():
    x, y, _, _ = load_digits()
    main, startup, _, loss, _, _ = build()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    loader = digits_loader(main.global_block().var("img"), main.global_block().var("label"),
                           x, y)

    rng = np.random.default_rng(0)

    def epoch(batches):
        for feed in batches:
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)

    def with_loader():
        epoch(loader())

    def by_hand():
        epoch(sliced_by_hand(x, y, rng))
    best = {"loader": float("inf"), "hand": float("inf")}
    for _ in range(5):   # interleaved, so a change in the machine's load hits both alike
        best["loader"] = min(best["loader"], _bench.best_time(with_loader, repeat=1, warmup=0))
        best["hand"] = min(best["hand"], _bench.best_time(by_hand, repeat=1, warmup=0))
    _bench.report("dataloader_train_epoch_digits_cnn", batch=BATCH,
                  loader_ms=round(best["loader"] * 1e3, 2),
                  by_hand_ms=round(best["hand"] * 1e3, 2),
                  ratio_loader_to_by_hand=round(best["loader"] / best["hand"], 3))


if __name__ == "__main__":
    wanted = sys.argv[1:] or ["pass", "train"]
    if "pass" in wanted:
        bench_pass()
    if "train" in wanted:
        bench_train()
