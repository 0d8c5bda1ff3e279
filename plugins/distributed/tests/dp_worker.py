"""A training job for the multi-rank tests, run under ``headrace launch``.

    python dp_worker.py MODE OUT [--steps N] [--batch B] [--kill-rank R --kill-step S]
                                 [--raise-rank R] [--hang-rank R] [--mismatch-rank R]

MODE: ``spmd`` (every rank builds and trains; rank 0 writes OUT.npz with the parameters of
each configuration), ``serialized`` (rank 0 builds once and sends the programs; the others
only serve: this script's serve_forever, or ``python -m headrace_distributed.worker``),
``single`` (one process, plain optimizer, global batch of world*B: the baseline the
data-parallel runs must match). The data is the same global sequence of batches whatever
the mode: rank r trains on rows [r*B, (r+1)*B) of each.
"""
import argparse
import os
import signal
import sys
import time

import numpy as np

import headrace as hr
import headrace_distributed as dist

# (name, batch norm?, bucket MB: 0 unfused, None: plain optimizer on one process)
CONFIGS = [("unfused", False, 0.0), ("fused", False, 0.05), ("sync_bn", True, 25.0)]


def build(with_bn, seed=7, wider=False):
    """The demo CNN (conv-conv-pool-fc-fc) in float64; batch norm after the first conv;
    ``wider``: another hidden width (a program that differs from the others' ranks)."""
    main, startup = hr.Program(), hr.Program()
    main.random_seed = startup.random_seed = seed
    with hr.program_guard(main, startup):
        img = hr.layers.data("img", shape=[-1, 1, 8, 8], dtype="float64")
        label = hr.layers.data("label", shape=[-1, 1], dtype="int64")
        h = hr.layers.conv2d(img, num_filters=8, filter_size=3, padding=1,
                             act=None if with_bn else "relu")
        if with_bn:
            h = hr.layers.batch_norm(h, act="relu")
        h = hr.layers.conv2d(h, num_filters=8, filter_size=3, padding=1, act="relu")
        h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
        h = hr.layers.fc(h, size=48 if wider else 32, act="relu")
        logits = hr.layers.fc(h, size=10)
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, label))
    return main, startup, loss


def batches(steps, global_batch, seed=3):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        yield {"img": rng.standard_normal((global_batch, 1, 8, 8)),
               "label": rng.integers(0, 10, (global_batch, 1)).astype("int64")}


def optimizer():
    return hr.optimizer.Momentum(learning_rate=0.05, momentum=0.9)


def params(main, scope):
    return {p.name: np.array(getattr(scope.get(p.name), "data", scope.get(p.name)))
            for p in main.all_parameters()}


def run_config(mode, with_bn, bucket, args, env):
    main, startup, loss = build(with_bn, wider=args.mismatch_rank == env.rank)
    scope = hr.Scope()
    kill = args.kill_rank == env.rank
    if mode == "single":
        with hr.program_guard(main, startup):
            optimizer().minimize(loss)
        exe = hr.Executor(hr.CPUPlace())
        exe.run(startup, scope=scope)
        for feed in batches(args.steps, args.batch * args.world):
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        return params(main, scope)
    with hr.program_guard(main, startup):
        dist.DistributedOptimizer(optimizer(), bucket_size_mb=bucket, sync_batch_norm=with_bn,
                                  check_programs=mode == "spmd").minimize(loss)
    if mode == "serialized":
        dist.launch_program(main, startup, batches(args.steps, args.batch * env.world_size),
                            [loss], scope=scope)
        return params(main, scope)
    exe = hr.Executor(hr.CPUPlace())
    exe.run(startup, scope=scope)
    lo, hi = env.rank * args.batch, (env.rank + 1) * args.batch
    for step, feed in enumerate(batches(args.steps, args.batch * env.world_size)):
        if kill and step == args.kill_step:
            os.kill(os.getpid(), signal.SIGKILL)
        if args.raise_rank == env.rank and step == args.kill_step:
            raise RuntimeError(f"rank {env.rank} stops on purpose at step {step}")
        if args.hang_rank == env.rank and step == args.kill_step:
            time.sleep(3600)                 # alive, but never reaches the next collective
        exe.run(main, feed={k: v[lo:hi] for k, v in feed.items()}, fetch_list=[loss],
                scope=scope)
    if args.checkpoint:
        check_checkpoint(exe, main, startup, scope, args.checkpoint)
    return params(main, scope)


def check_checkpoint(exe, main, startup, scope, dirname):
    """Rank 0 saves; every rank loads into a fresh scope and finds the trained values."""
    dist.save_checkpoint(exe, dirname, main, scope=scope)
    fresh = hr.Scope()
    exe.run(startup, scope=fresh)
    dist.load_checkpoint(exe, dirname, main, scope=fresh)
    for name, value in params(main, scope).items():
        np.testing.assert_array_equal(params(main, fresh)[name], value, err_msg=name)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("spmd", "serialized", "single"))
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--world", type=int, default=2, help="single: the world it stands for")
    ap.add_argument("--configs", default=",".join(c[0] for c in CONFIGS))
    ap.add_argument("--kill-rank", type=int, default=-1)
    ap.add_argument("--kill-step", type=int, default=2)
    ap.add_argument("--raise-rank", type=int, default=-1)
    ap.add_argument("--hang-rank", type=int, default=-1)
    ap.add_argument("--mismatch-rank", type=int, default=-1)
    ap.add_argument("--checkpoint", help="spmd: save to this directory and load it back")
    args = ap.parse_args(argv)
    env = dist.init() if args.mode != "single" else dist.Env(0, 1)
    if args.mode == "serialized" and env.rank != 0:
        dist.serve_forever()                 # no model code runs on a worker
        return
    wanted = args.configs.split(",")
    results = {}
    for name, with_bn, bucket in CONFIGS:
        if name in wanted:
            got = run_config(args.mode, with_bn, bucket, args, env)
            if got is not None:
                results.update({f"{name}/{k}": v for k, v in got.items()})
    if args.mode == "serialized":
        dist.stop_workers()
    if env.rank == 0:
        np.savez(args.out, **results)


if __name__ == "__main__":
    main(sys.argv[1:])
