"""A character-level language model: a DynamicRNN over the lines of real text that ships
with Python (the docstrings of standard-library modules), trained without padding.

Each line is one sequence (their lengths differ); the model reads characters and predicts
the next one: embedding -> RNN step ``h = tanh(W x_t + U h_prev + b)`` -> softmax over the
characters. The parameters are created inside the loop's step block and live in the global
block; ``minimize`` trains them through ``while_grad``. Perplexity on held-out lines is
printed before and after training::

    python examples/char_lm.py [--steps 300]
"""
import argparse
import importlib

import numpy as np

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor

MODULES = ["argparse", "collections", "json", "textwrap", "string", "random", "functools",
           "itertools", "pathlib", "csv", "heapq", "bisect", "shutil", "calendar"]
EMBED, HIDDEN = 16, 64


def corpus(max_len=60):
    """Lines of standard-library docstrings, 8 to ``max_len`` characters."""
    lines = []
    for name in MODULES:
        doc = importlib.import_module(name).__doc__ or ""
        lines += [ln.strip()[:max_len] for ln in doc.splitlines() if len(ln.strip()) >= 8]
    chars = sorted(set("".join(lines)))
    return lines, {c: i for i, c in enumerate(chars)}


def build(vocab, lr=0.02):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 7
    with hr.program_guard(main, startup):
        chars = layers.data("chars", shape=[1], dtype="int64", lod_level=1)
        nexts = layers.data("next", shape=[1], dtype="int64", lod_level=1)
        emb = layers.embedding(chars, size=[vocab, EMBED])
        drnn = layers.DynamicRNN()
        with drnn.block():
            x_t = drnn.step_input(emb)
            prev = drnn.memory(shape=[HIDDEN], value=0.0)
            h = layers.fc([x_t, prev], size=HIDDEN, act="tanh")
            drnn.update_memory(prev, h)
            drnn.output(h)
        hidden = drnn()
        logits = layers.fc(hidden, size=vocab)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, nexts))
        test = main.clone(for_test=True)
        hr.optimizer.Adam(learning_rate=lr).minimize(loss)
    return main, test, startup, loss


def to_feed(lines, index):
    ids = [np.array([index[c] for c in ln], np.int64) for ln in lines]
    lens = [len(s) - 1 for s in ids]
    chars = np.concatenate([s[:-1] for s in ids]).reshape(-1, 1)
    nexts = np.concatenate([s[1:] for s in ids]).reshape(-1, 1)
    return {"chars": create_lod_tensor(chars, [lens]),
            "next": create_lod_tensor(nexts, [lens])}


def perplexity(exe, prog, loss, scope, batches):
    # Mean cross-entropy per character over the batches, weighted by their characters.
    total = count = 0.0
    for feed in batches:
        (value,) = exe.run(prog, feed=feed, fetch_list=[loss], scope=scope)
        n = feed["next"].data.shape[0]
        total += float(value) * n
        count += n
    return float(np.exp(total / count))


def main(steps=300, batch=16, seed=0, verbose=True):
    lines, index = corpus()
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(lines))
    held, train = [lines[i] for i in order[:64]], [lines[i] for i in order[64:]]
    prog, test, startup, loss = build(len(index))
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    held_batches = [to_feed(held[i:i + batch], index) for i in range(0, len(held), batch)]
    before = perplexity(exe, test, loss, scope, held_batches)
    for step in range(steps):
        pick = rng.choice(len(train), size=batch, replace=False)
        (value,) = exe.run(prog, feed=to_feed([train[i] for i in pick], index),
                           fetch_list=[loss], scope=scope)
        if verbose and step % 50 == 0:
            print(f"step {step:4d}  train loss {float(value):.3f}")
    after = perplexity(exe, test, loss, scope, held_batches)
    if verbose:
        print(f"{len(lines)} lines, {len(index)} characters; held-out perplexity "
              f"{before:.2f} -> {after:.2f}")
    return before, after, len(index)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    main(parser.parse_args().steps)
