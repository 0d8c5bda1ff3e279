"""Shared benchmark plumbing: pinned threads, best-of timing, the optional PyTorch peer.

Import this module before NumPy in a benchmark: the thread pins must be in the environment
before BLAS/OpenMP start. Every benchmark prints one JSON line with its figures, the peer's
figures from the same run, their ratio, and the thread settings.
"""
import json
import os
import platform
import statistics
import sys
import time

THREADS = os.environ.get("HEADRACE_BENCH_THREADS", "1")
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = THREADS
# "headrace" or "torch": run that framework alone (where a benchmark can). Two-thread figures
# need it: two frameworks' thread pools in one process busy-wait against each other.
ONLY = os.environ.get("HEADRACE_BENCH_ONLY", "")


def runs(name):
    """Whether this run measures framework ``name`` (HEADRACE_BENCH_ONLY)."""
    return not ONLY or ONLY == name


def torch_or_none():
    """PyTorch CPU if installed (pip install torch==2.13.0), pinned to the same threads; None
    when not installed or HEADRACE_BENCH_ONLY=headrace."""
    if not runs("torch"):
        return None
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(int(THREADS))
    return torch


def best_time(fn, repeat=5, number=1, warmup=1):
    """Best wall time of ``number`` calls of ``fn``, over ``repeat`` tries, per call."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def interleaved(runs, rounds, number=1, warmup=1):
    """The per-call wall and CPU seconds of each of ``runs`` ({name: fn}) in every round, the
    runs taking turns round after round (the machine is shared: a change in its load then hits
    every run alike), after ``warmup`` calls each (plans, buffers): ({name: [wall]},
    {name: [cpu]}). CPU time is the process's: what each framework spent on its threads, not
    the wait for a loaded machine."""
    wall = {k: [] for k in runs}
    cpu = {k: [] for k in runs}
    for fn in runs.values():
        for _ in range(warmup):
            fn()
    for _ in range(rounds):
        for k, fn in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(number):
                fn()
            cpu[k].append((time.process_time() - c0) / number)
            wall[k].append((time.perf_counter() - w0) / number)
    return wall, cpu


def medians(times):
    """{name: median} of interleaved()'s {name: [seconds]}."""
    return {k: statistics.median(v) for k, v in times.items()}


def torch_train_step(torch, net, opt, x, y):
    """One PyTorch eager training step of ``net`` on (x, y) with cross entropy and ``opt``,
    as a function that returns the loss: the peer of headrace's training benchmarks."""
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def report(name, **figures):
    figures = {"benchmark": name, **figures,
               "threads": {"OMP_NUM_THREADS": os.environ["OMP_NUM_THREADS"],
                           "OPENBLAS_NUM_THREADS": os.environ["OPENBLAS_NUM_THREADS"]},
               "python": platform.python_version(), "machine": platform.machine()}
    if ONLY:
        figures["only"] = ONLY
    print(json.dumps(figures))
    sys.stdout.flush()
