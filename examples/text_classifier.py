"""A text classifier over LoD word ids, no padding: stacked dynamic_lstm layers with max
pooling over each sentence (``--model lstm``), or Fluid's convolution_net (``--model conv``: two
branches of sequence_conv over 3 and 4 words, each max-pooled over the sentence, then one fc
over both).

The sentences follow a stated rule an order-blind model cannot learn: 4 to 25 words from a
vocabulary of 30, among them exactly one "not" (id 0) and one "good" (id 1); the label is 1
when "good" comes before "not" ("good, not bad") and 0 otherwise. A bag of words sees the same
two words either way and stays at 50%. For the LSTMs the two words are anywhere in the
sentence. For the convolutions they lie within 3 consecutive words (one or two positions
apart, either order), so that one window of the 3-word filter sees both: the label is 1 when
"good" comes right before "not", within 3 words.

    python examples/text_classifier.py [--model conv|lstm] [--steps 300]
"""
import argparse

import numpy as np

import headrace as hr
from headrace import layers

VOCAB, EMBED, HIDDEN = 30, 16, 32


def sentences(rng, n, span=None):
    """``n`` (word ids, label) pairs; ``span``: "not" and "good" lie within that many
    consecutive words (None: anywhere)."""
    out = []
    for _ in range(n):
        words = rng.integers(2, VOCAB, int(rng.integers(4, 26)))
        if span is None:
            at = rng.choice(len(words), 2, replace=False)
        else:   # a distance of 1 to span - 1 words, either order
            gap = int(rng.integers(1, span)) * int(rng.choice([-1, 1]))
            first = int(rng.integers(max(0, -gap), len(words) - max(0, gap)))
            at = [first, first + gap]
        words[at[0]], words[at[1]] = 0, 1
        out.append((words, int(at[1] < at[0])))
    return out


# The rule each model learns: where "not" and "good" may lie (see sentences).
SPAN = {"lstm": None, "conv": 3}


def lstm_net(emb, layers_count=2):
    h = emb
    for _ in range(layers_count):   # stacked LSTMs: each reads the one below
        h, _ = layers.dynamic_lstm(layers.fc(h, size=4 * HIDDEN), 4 * HIDDEN,
                                   use_peepholes=False)
    return layers.sequence_pool(h, "max")


def convolution_net(emb):
    # Fluid's convolution_net (sequence_conv_pool over 3 and 4 words); max pooling rather than
    # its sqrt pooling, since the label says whether one window anywhere holds the pattern.
    branches = [layers.sequence_pool(layers.sequence_conv(emb, HIDDEN, filter_size=size,
                                                          act="tanh"), "max")
                for size in (3, 4)]
    return layers.fc(branches, size=HIDDEN, act="relu")


def build(model="lstm"):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 5
    with hr.program_guard(main, startup):
        words = layers.data("words", shape=[1], dtype="int64", lod_level=1)
        label = layers.data("label", shape=[1], dtype="int64")
        emb = layers.embedding(words, size=[VOCAB, EMBED])
        sentence = {"lstm": lstm_net, "conv": convolution_net}[model](emb)
        logits = layers.fc(sentence, size=2)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        acc = layers.accuracy(layers.softmax(logits), label)
        test = main.clone(for_test=True)
        hr.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return main, test, startup, loss, acc


def main(steps=300, batch=32, seed=0, verbose=True, model="lstm"):
    rng = np.random.default_rng(seed)
    span = SPAN[model]
    held_out = sentences(rng, 300, span)
    prog, test, startup, loss, acc = build(model)
    # A sample is (word ids, label): the loader gives each batch's sentences their LoD.
    feed_list = [prog.global_block().var("words"), prog.global_block().var("label")]
    loader = hr.io.DataLoader.from_generator(feed_list=feed_list, capacity=4)
    loader.set_sample_generator(lambda: (s for _ in range(steps * batch)
                                         for s in sentences(rng, 1, span)), batch_size=batch)
    held = hr.io.DataFeeder(feed_list).feed(held_out)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for step, feed in enumerate(loader()):
        (value,) = exe.run(prog, feed=feed, fetch_list=[loss], scope=scope)
        if verbose and step % 50 == 0:
            print(f"step {step:4d}  loss {float(value):.4f}")
    (accuracy,) = exe.run(test, feed=held, fetch_list=[acc], scope=scope)
    if verbose:
        print(f"held-out accuracy {float(accuracy):.3f} (a bag of words: 0.5)")
    return float(accuracy)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SPAN), default="lstm")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    main(args.steps, model=args.model)
