"""word2vec: an n-gram language model over generated text, with one shared embedding.

Four context words are embedded with the SAME parameter (ParamAttr name "shared_w"), their
embeddings concatenated, and an MLP predicts the next word. The text is generated from a small
grammar so the next word is predictable; the model should beat the unigram baseline by far.

    python examples/word2vec.py [--epochs 10]
"""
import argparse

import numpy as np

import headrace as hr

N_GRAM, EMBED, HIDDEN = 4, 16, 64


def generate_text(n_sentences=1500, seed=0):
    rng = np.random.default_rng(seed)
    subjects, verbs = ["the cat", "a dog", "my friend", "the bird"], ["eats", "sees", "likes"]
    objects = ["the fish", "a ball", "some bread", "the tree"]
    words = []
    for _ in range(n_sentences):
        words += f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} .".split()
    vocab = sorted(set(words))
    index = {w: i for i, w in enumerate(vocab)}
    ids = np.array([index[w] for w in words], np.int64)
    grams = np.lib.stride_tricks.sliding_window_view(ids, N_GRAM + 1)
    return grams, vocab


def main(epochs=10, seed=0):
    grams, vocab = generate_text(seed=seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(grams))
    train, test = grams[order[:-1000]], grams[order[-1000:]]
    main_prog, startup = hr.Program(), hr.Program()
    startup.random_seed = seed
    with hr.program_guard(main_prog, startup):
        ctx = [hr.layers.data(f"w{k}", shape=[-1, 1], dtype="int64") for k in range(N_GRAM)]
        nxt = hr.layers.data("next", shape=[-1, 1], dtype="int64")
        shared = hr.ParamAttr(name="shared_w")
        embs = [hr.layers.embedding(c, size=[len(vocab), EMBED], param_attr=shared) for c in ctx]
        h = hr.layers.fc(hr.layers.concat(embs, axis=1), size=HIDDEN, act="tanh")
        logits = hr.layers.fc(h, size=len(vocab))
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, nxt))
        acc = hr.layers.accuracy(hr.layers.softmax(logits), nxt)
        test_prog = main_prog.clone(for_test=True)
        hr.optimizer.Adam(learning_rate=1e-2).minimize(loss)
    assert len([p for p in main_prog.all_parameters() if p.name == "shared_w"]) == 1

    # A sample is one n-gram's N_GRAM + 1 ids, one per feed variable (w0..w3, next).
    loaders = {}
    for part, grams_of in (("train", train), ("test", test)):
        loaders[part] = hr.io.DataLoader.from_generator(feed_list=ctx + [nxt], capacity=4)
        loaders[part].set_sample_generator(hr.io.reader.map_readers(tuple, grams_of.__iter__),
                                           batch_size=64, drop_last=False)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for _epoch in range(epochs):
        for feed in loaders["train"]():
            exe.run(main_prog, feed=feed, fetch_list=[loss], scope=scope)
    test_acc = hr.io.test_loop(exe, test_prog, loaders["test"], [acc], scope=scope)[acc.name]
    counts = np.bincount(train[:, -1], minlength=len(vocab))
    baseline = counts.max() / counts.sum()
    print(f"next-word accuracy {float(test_acc):.3f} (unigram baseline {baseline:.3f})")
    return float(test_acc), float(baseline)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    main(ap.parse_args().epochs)
