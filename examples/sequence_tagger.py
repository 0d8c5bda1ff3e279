"""A sequence tagger with dynamic_gru over variable-length LoD batches, no padding.

The data follow a stated rule that needs memory: tokens are random words from a vocabulary
of 12; a word's tag is 1 when the word "open" (id 0) has been seen more often than "close"
(id 1) so far in its sentence (a bracket-depth tagger), else 0. Sentences have 3 to 20
words. A bidirectional context is not needed, a forward GRU is enough; a bag of words (no
memory) cannot do better than the tag's base rate.

    python examples/sequence_tagger.py [--steps 300]
"""
import argparse

import numpy as np

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor

VOCAB, EMBED, HIDDEN = 12, 16, 32


def sentences(rng, n):
    out = []
    for _ in range(n):
        words = rng.integers(0, VOCAB, int(rng.integers(3, 21)))
        depth = np.cumsum(np.where(words == 0, 1, np.where(words == 1, -1, 0)))
        out.append((words, (depth > 0).astype(np.int64)))
    return out


def to_feed(batch):
    lens = [[len(w) for w, _ in batch]]
    words = np.concatenate([w for w, _ in batch]).reshape(-1, 1).astype(np.int64)
    tags = np.concatenate([t for _, t in batch]).reshape(-1, 1)
    return {"words": create_lod_tensor(words, lens), "tags": create_lod_tensor(tags, lens)}


def build():
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 3
    with hr.program_guard(main, startup):
        words = layers.data("words", shape=[1], dtype="int64", lod_level=1)
        tags = layers.data("tags", shape=[1], dtype="int64", lod_level=1)
        emb = layers.embedding(words, size=[VOCAB, EMBED])
        hidden = layers.dynamic_gru(layers.fc(emb, size=3 * HIDDEN), HIDDEN)
        logits = layers.fc(hidden, size=2)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, tags))
        acc = layers.accuracy(layers.softmax(logits), tags)
        test = main.clone(for_test=True)
        hr.optimizer.Adam(learning_rate=0.02).minimize(loss)
    return main, test, startup, loss, acc


def main(steps=300, batch=32, seed=0, verbose=True):
    rng = np.random.default_rng(seed)
    held = to_feed(sentences(rng, 200))
    prog, test, startup, loss, acc = build()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for step in range(steps):
        (value,) = exe.run(prog, feed=to_feed(sentences(rng, batch)), fetch_list=[loss],
                           scope=scope)
        if verbose and step % 50 == 0:
            print(f"step {step:4d}  loss {float(value):.4f}")
    (accuracy,) = exe.run(test, feed=held, fetch_list=[acc], scope=scope)
    base = float(np.mean(np.asarray(held["tags"].data)))
    base = max(base, 1 - base)
    if verbose:
        print(f"held-out tag accuracy {float(accuracy):.3f} (the base rate: {base:.3f})")
    return float(accuracy), base


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    main(parser.parse_args().steps)
