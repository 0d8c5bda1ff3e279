"""A text classifier over LoD word ids with stacked dynamic_lstm layers and max pooling over
each sentence, no padding.

The sentences follow a stated rule an order-blind model cannot learn: 4 to 25 words from a
vocabulary of 30, among them exactly one "not" (id 0) and one "good" (id 1) at random places;
the label is 1 when "good" comes before "not" ("good, not bad") and 0 otherwise. A bag of words
sees the same two words either way and stays at 50%.

    python examples/text_classifier.py [--steps 300]
"""
import argparse

import numpy as np

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor

VOCAB, EMBED, HIDDEN = 30, 16, 32


def sentences(rng, n):
    out = []
    for _ in range(n):
        words = rng.integers(2, VOCAB, int(rng.integers(4, 26)))
        at = rng.choice(len(words), 2, replace=False)
        words[at[0]], words[at[1]] = 0, 1
        out.append((words, int(at[1] < at[0])))
    return out


def to_feed(batch):
    words = np.concatenate([w for w, _ in batch]).reshape(-1, 1).astype(np.int64)
    return {"words": create_lod_tensor(words, [[len(w) for w, _ in batch]]),
            "label": np.array([[y] for _, y in batch], np.int64)}


def build(layers_count=2):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 5
    with hr.program_guard(main, startup):
        words = layers.data("words", shape=[1], dtype="int64", lod_level=1)
        label = layers.data("label", shape=[1], dtype="int64")
        h = layers.embedding(words, size=[VOCAB, EMBED])
        for _ in range(layers_count):   # stacked LSTMs: each reads the one below
            h, _ = layers.dynamic_lstm(layers.fc(h, size=4 * HIDDEN), 4 * HIDDEN,
                                       use_peepholes=False)
        sentence = layers.sequence_pool(h, "max")
        logits = layers.fc(sentence, size=2)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        acc = layers.accuracy(layers.softmax(logits), label)
        test = main.clone(for_test=True)
        hr.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return main, test, startup, loss, acc


def main(steps=300, batch=32, seed=0, verbose=True):
    rng = np.random.default_rng(seed)
    held = to_feed(sentences(rng, 300))
    prog, test, startup, loss, acc = build()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for step in range(steps):
        (value,) = exe.run(prog, feed=to_feed(sentences(rng, batch)), fetch_list=[loss],
                           scope=scope)
        if verbose and step % 50 == 0:
            print(f"step {step:4d}  loss {float(value[0]):.4f}")
    (accuracy,) = exe.run(test, feed=held, fetch_list=[acc], scope=scope)
    if verbose:
        print(f"held-out accuracy {float(accuracy[0]):.3f} (a bag of words: 0.5)")
    return float(accuracy[0])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    main(parser.parse_args().steps)
