"""A training loop over a DataLoader: passes, a progress bar, per-epoch metrics.

::

    history = hr.io.train_loop(exe, main, loader, {"loss": loss, "acc": acc}, epochs=10,
                               test=(test_program, test_loader), scope=scope)
    history[-1]    # {"epoch": 10, "loss": ..., "acc": ..., "test_loss": ..., "seconds": ...}

A metric is a fetched value's mean over the pass, each batch weighted by its samples (so a
short last batch counts for what it holds). The bar is tqdm's, drawn on stderr only when stderr
is a terminal (never carriage-return frames in a log or a pipe), and left out without tqdm.
"""
import sys
import time

import numpy as np

from ..framework import Variable
from ..errors import HeadraceError
from .dataloader import GeneratorLoader

__all__ = ["test_loop", "train_loop"]


_RESERVED = frozenset({"epoch", "batches", "samples", "seconds", "wait_seconds"})


def _fetches(fetch_list):
    """{metric name: variable name}: a list's Variables (or names) under their own names, a
    dict's under its keys (``{"loss": loss, "acc": acc}``)."""
    items = fetch_list.items() if isinstance(fetch_list, dict) else None
    if items is None:
        if isinstance(fetch_list, (Variable, str)) or not isinstance(fetch_list, (list, tuple)):
            items = ()
        else:
            items = [(f.name if isinstance(f, Variable) else f, f) for f in fetch_list]
    if not items:
        raise HeadraceError(f"train_loop: fetch_list must be a non-empty list (or a dict by "
                            f"metric name) of the scalar Variables (or names) to average, got "
                            f"{fetch_list!r}"[:300])
    fetches = {}
    for label, f in items:
        if not isinstance(f, (Variable, str)):
            raise HeadraceError(f"train_loop: fetch_list items are Variables or names, got "
                                f"{f!r}"[:300])
        if label in _RESERVED:
            raise HeadraceError(f"train_loop: the metric name '{label}' is taken by the "
                                f"loop's own figures {sorted(_RESERVED)}: rename it in a "
                                f"fetch_list dict")
        fetches[str(label)] = f.name if isinstance(f, Variable) else f
    return fetches


def _bar(desc, enabled, total):
    if enabled is None:
        enabled = getattr(sys.stderr, "isatty", lambda: False)()
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:   # the bar is a nicety; the metrics are returned and printed anyway
        return None
    return tqdm(desc=desc, total=total, unit="batch", leave=False, file=sys.stderr)


def _run_pass(exe, program, loader, fetches, scope, bar):
    if not isinstance(loader, GeneratorLoader):
        raise HeadraceError(f"train_loop: the loader must be a DataLoader (hr.io.DataLoader."
                            f"from_generator), got {type(loader).__name__}")
    names, labels = list(fetches.values()), list(fetches)
    sums, samples, batches = np.zeros(len(names)), 0, 0
    t0 = time.perf_counter()
    epoch = iter(loader)
    try:
        for feed in epoch:
            values = exe.run(program, feed=feed, fetch_list=names, scope=scope)
            n = epoch.last_count
            sums += n * np.array([float(np.mean(v)) for v in values])
            samples += n
            batches += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix({k: f"{s / samples:.4f}" for k, s in zip(labels, sums)},
                                refresh=False)
    finally:
        epoch.close()   # an exception in a step stops the reader thread too
    if not batches:
        raise HeadraceError("train_loop: the loader yielded no batch in a pass (an empty "
                            "reader, or drop_last with fewer samples than batch_size)")
    metrics = {k: float(s / samples) for k, s in zip(labels, sums)}
    metrics.update(batches=batches, samples=samples, seconds=time.perf_counter() - t0,
                   wait_seconds=epoch.wait_seconds)
    return metrics


def test_loop(exe, program, loader, fetch_list, scope=None):
    """One pass of ``program`` (a test clone) over ``loader``: the fetched values' means
    weighted by samples, and ``batches``, ``samples``, ``seconds``, ``wait_seconds`` (the
    time spent waiting for the reader)."""
    return _run_pass(exe, program, loader, _fetches(fetch_list), scope, None)


test_loop.__test__ = False   # a library function, not a test for pytest to collect


def train_loop(exe, program, loader, fetch_list, epochs=1, scope=None, test=None,
               progress=None, verbose=True, file=None):
    """Run ``program`` over every batch of ``loader``, ``epochs`` times; return one dict per
    epoch: ``epoch``, each fetch's weighted mean under its name (``fetch_list`` a list of
    Variables or names, or a dict by the metric's name), ``batches``, ``samples``,
    ``seconds``, ``wait_seconds``, and with ``test=(test_program, test_loader)`` the test
    pass's means as ``test_<name>`` after each epoch. ``progress``: a tqdm bar (default: when
    stderr is a terminal); ``verbose``: one line per epoch on ``file`` (default stdout)."""
    fetches = _fetches(fetch_list)
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise HeadraceError(f"train_loop: argument 'epochs' must be an int >= 1, got {epochs!r}")
    if test is not None and (not isinstance(test, (list, tuple)) or len(test) != 2):
        raise HeadraceError("train_loop: argument 'test' must be (test_program, test_loader)")
    history = []
    for e in range(1, epochs + 1):
        # A generator's length is unknown until a pass ends: from the second epoch on, the
        # bar shows the first pass's batch count as its total (and so a time left).
        bar = _bar(f"epoch {e}/{epochs}", progress, history[0]["batches"] if history else None)
        try:
            metrics = {"epoch": e, **_run_pass(exe, program, loader, fetches, scope, bar)}
        finally:
            if bar is not None:
                bar.close()
        if test is not None:
            tested = _run_pass(exe, test[0], test[1], fetches, scope, None)
            metrics.update({f"test_{k}": tested[k] for k in fetches})
        history.append(metrics)
        if verbose:
            shown = ", ".join(f"{k} {metrics[k]:.4f}" for k in fetches)
            if test is not None:
                shown += " | test " + ", ".join(f"{k} {metrics['test_' + k]:.4f}"
                                                for k in fetches)
            print(f"epoch {e}/{epochs}: {shown} ({metrics['seconds']:.2f} s, waiting for "
                  f"data {metrics['wait_seconds']:.2f} s)", file=file or sys.stdout, flush=True)
    return history
