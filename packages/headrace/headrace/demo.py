"""``headrace demo``: train a small CNN on scikit-learn's handwritten digits, end to end.

The 8x8 digits ship inside scikit-learn (no download). The demo builds the network with the
layers API, trains it with Adam, reports loss and accuracy per epoch (under a progress bar when
it writes to a terminal), evaluates the held-out test split, saves the inference model,
reloads it into a fresh scope and checks that the reloaded model predicts exactly what the
trained one does. Without ``out_dir`` the model goes to a temporary directory that is removed
before ``run`` returns; with one, the directory is checked before training starts, so a path
where nothing can be saved fails at once rather than after the training.
"""
import contextlib
import os
import sys
import tempfile
import time

import numpy as np

from . import io, layers, optimizer
from .errors import HeadraceError
from .framework import Program, program_guard
from .io.checkpoint import DirectorySave
from .runtime import CPUPlace, Executor, Scope

__all__ = ["build", "check_out_dir", "load_digits", "run"]


def load_digits(test_fraction=0.2, seed=0):
    """(x_train, y_train, x_test, y_test): images [N, 1, 8, 8] float32 in [0, 1], labels
    [N, 1] int64; a stratified split so every digit is in both parts."""
    try:
        from sklearn.datasets import load_digits as sk_digits
    except ImportError:
        raise HeadraceError("headrace demo needs scikit-learn for its bundled digits data set: "
                            "pip install scikit-learn") from None
    data = sk_digits()
    x = (data.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = data.target.astype(np.int64).reshape(-1, 1)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), bool)
    for digit in range(10):
        idx = np.flatnonzero(y[:, 0] == digit)
        test[rng.choice(idx, int(round(len(idx) * test_fraction)), replace=False)] = True
    return x[~test], y[~test], x[test], y[test]


def build(seed=1):
    """(main, startup, test program, loss, accuracy, logits) of the digits CNN."""
    main, startup = Program(), Program()
    main.random_seed = startup.random_seed = seed
    with program_guard(main, startup):
        img = layers.data("img", shape=[-1, 1, 8, 8], dtype="float32")
        label = layers.data("label", shape=[-1, 1], dtype="int64")
        h = layers.conv2d(img, num_filters=16, filter_size=3, padding=1, act="relu")
        h = layers.conv2d(h, num_filters=32, filter_size=3, padding=1, act="relu")
        h = layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
        h = layers.fc(h, size=64, act="relu")
        logits = layers.fc(h, size=10)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        acc = layers.accuracy(layers.softmax(logits), label)
        test_program = main.clone(for_test=True)
        optimizer.Adam(learning_rate=3e-3).minimize(loss)
    return main, startup, test_program, loss, acc, logits


def _progress(iterable, desc, total, enabled):
    if not enabled:
        return iterable, None
    try:
        from tqdm import tqdm
    except ImportError:  # the bar is a nicety; the figures are printed anyway
        return iterable, None
    bar = tqdm(iterable, desc=desc, total=total, leave=False, unit="batch", file=sys.stderr)
    return bar, bar


def _terminal():
    """The bar redraws itself with carriage returns: only where both streams are terminals,
    never into a log or a pipe."""
    return all(getattr(s, "isatty", lambda: False)() for s in (sys.stdout, sys.stderr))


def check_out_dir(out_dir):
    """Raise a HeadraceError (SaveError) naming ``out_dir`` unless a save into it can start:
    the save's own preparation, and one file written where the save will write, then removed
    (nothing is left behind, and an existing model there is untouched)."""
    probe = DirectorySave(out_dir)
    try:
        probe.write(".headrace-demo-trial", "a trial file (--out is checked before training)", b"")
    finally:
        probe.abort()


def run(epochs=15, batch_size=32, seed=1, out_dir=None, quiet=False, place=None,
        progress=None):
    """Train on ``place`` (default the CPU), evaluate, save, reload and compare; return a dict
    of the results. ``progress``: draw tqdm bars (default: when stdout and stderr are both
    terminals and not ``quiet``). ``model_dir`` in the result is None when the model went to
    a temporary directory, removed before returning."""
    if out_dir is not None:
        check_out_dir(out_dir)
    with contextlib.ExitStack() as stack:
        model_dir = out_dir
        if model_dir is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="headrace-digits-"))
            model_dir = os.path.join(tmp, "model")   # the save's hidden siblings stay inside
        result = _run(epochs, batch_size, seed, model_dir, quiet, place,
                      _terminal() and not quiet if progress is None else progress,
                      kept=out_dir is not None)
    if out_dir is None:
        result["model_dir"] = None
    return result


def _run(epochs, batch_size, seed, model_dir, quiet, place, progress, kept):
    say = (lambda *a: None) if quiet else print
    t0 = time.perf_counter()
    x_train, y_train, x_test, y_test = load_digits()
    main, startup, test_program, loss, acc, logits = build(seed)
    exe, scope = Executor(place if place is not None else CPUPlace()), Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(seed)
    say(f"digits: {len(x_train)} training and {len(x_test)} test images, 8x8")
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x_train))
        batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        it, bar = _progress(batches, f"epoch {epoch}/{epochs}", len(batches), progress)
        losses, accs = [], []
        for b in it:
            l, a = exe.run(main, feed={"img": x_train[b], "label": y_train[b]},
                           fetch_list=[loss, acc], scope=scope)
            losses.append(float(l))
            accs.append(float(a))
            if bar is not None:
                bar.set_postfix(loss=f"{np.mean(losses):.4f}", acc=f"{np.mean(accs):.3f}")
        if bar is not None:
            bar.close()
        say(f"epoch {epoch:2d}/{epochs}: loss {np.mean(losses):.4f}, "
            f"train accuracy {np.mean(accs):.4f}")
    (test_logits,) = exe.run(test_program, feed={"img": x_test, "label": y_test},
                             fetch_list=[logits], scope=scope)
    test_acc = float(np.mean(np.argmax(test_logits, axis=1) == y_test[:, 0]))
    say(f"test accuracy: {test_acc:.4f} on {len(x_test)} held-out images")
    io.save_inference_model(model_dir, ["img"], [logits], exe, main_program=test_program,
                            model_filename="digits.pdmodel", params_filename="digits.pdiparams",
                            scope=scope)
    fresh = Scope()
    program, feeds, fetches = io.load_inference_model(model_dir, exe,
                                                      model_filename="digits.pdmodel",
                                                      params_filename="digits.pdiparams",
                                                      scope=fresh)
    (reloaded,) = exe.run(program, feed={feeds[0]: x_test}, fetch_list=fetches, scope=fresh)
    same = bool(np.array_equal(np.argmax(reloaded, 1), np.argmax(test_logits, 1)))
    close = bool(np.allclose(reloaded, test_logits, rtol=1e-5, atol=1e-5))
    where = model_dir if kept else "a temporary directory (removed at the end)"
    say(f"saved the inference model to {where}; reloaded in a fresh scope: predictions "
        f"{'match' if same and close else 'DIFFER'}")
    seconds = time.perf_counter() - t0
    say(f"done in {seconds:.1f} s")
    return {"test_accuracy": test_acc, "reload_matches": same and close, "seconds": seconds,
            "model_dir": model_dir,
            "files": sorted(n for n in os.listdir(model_dir) if not n.startswith("."))}
