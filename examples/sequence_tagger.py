"""A sequence tagger with dynamic_gru over variable-length LoD batches, no padding.

The data follow a stated rule that needs memory: tokens are random words from a vocabulary
of 12; a word's tag is 1 when the word "open" (id 0) has been seen more often than "close"
(id 1) so far in its sentence (a bracket-depth tagger), else 0. Sentences have 3 to 20
words. A bidirectional context is not needed, a forward GRU is enough; a bag of words (no
memory) cannot do better than the tag's base rate. The sentences reach the program through a
DataLoader, which makes each batch's LoD from the sentences' lengths.

    python examples/sequence_tagger.py [--steps 300]
"""
import argparse

import numpy as np

import headrace as hr
from headrace import layers

VOCAB, EMBED, HIDDEN = 12, 16, 32


def sentences(rng, n):
    out = []
    for _ in range(n):
        words = rng.integers(0, VOCAB, int(rng.integers(3, 21)))
        depth = np.cumsum(np.where(words == 0, 1, np.where(words == 1, -1, 0)))
        out.append((words, (depth > 0).astype(np.int64)))
    return out


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
    held_out = sentences(rng, 200)
    prog, test, startup, loss, acc = build()
    feed_list = [prog.global_block().var("words"), prog.global_block().var("tags")]
    # A sample is one sentence: (word ids, tags), each a sequence of its own length; the loader
    # concatenates a batch's sentences into rows and gives them their LoD.
    loader = hr.io.DataLoader.from_generator(feed_list=feed_list, capacity=4)
    loader.set_sample_generator(lambda: (s for _ in range(steps * batch)
                                         for s in sentences(rng, 1)), batch_size=batch)
    held = hr.io.DataFeeder(feed_list).feed(held_out)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for step, feed in enumerate(loader()):
        (value,) = exe.run(prog, feed=feed, fetch_list=[loss], scope=scope)
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
