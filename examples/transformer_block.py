"""A transformer encoder block (multi-head self-attention with matmul, softmax, layer_norm,
a gelu feed-forward, dropout, residuals), trained on a task that needs attention.

Each sequence has 12 tokens from a vocabulary of 16; a token's label is 1 when the same token
appears elsewhere in its sequence. No single position can tell: the block must compare every
token with every other (attention), while a per-token model stays at the base rate.

    python examples/transformer_block.py [--steps 300]
"""
import argparse
import math

import numpy as np

import headrace as hr
from headrace import layers

VOCAB, LENGTH, WIDTH, HEADS = 16, 12, 64, 4


def encoder_block(x, width, heads, dropout=0.0, is_test=False):
    """One post-norm encoder block over x [batch, length, width]."""
    dk = width // heads

    def split(t):   # [B, L, W] -> [B, H, L, dk]
        return layers.transpose(layers.reshape(t, [0, 0, heads, dk]), [0, 2, 1, 3])

    q, k, v = (split(layers.fc(x, size=width, num_flatten_dims=2)) for _ in range(3))
    weights = layers.softmax(layers.matmul(q, k, transpose_y=True, alpha=1 / math.sqrt(dk)))
    if dropout:
        weights = layers.dropout(weights, dropout, is_test=is_test)
    context = layers.reshape(layers.transpose(layers.matmul(weights, v), [0, 2, 1, 3]),
                             [0, 0, width])
    x = layers.layer_norm(layers.elementwise_add(
        x, layers.fc(context, size=width, num_flatten_dims=2)), begin_norm_axis=2)
    hidden = layers.gelu(layers.fc(x, size=4 * width, num_flatten_dims=2))
    return layers.layer_norm(layers.elementwise_add(
        x, layers.fc(hidden, size=width, num_flatten_dims=2)), begin_norm_axis=2)


def batch(rng, n):
    tokens = rng.integers(0, VOCAB, (n, LENGTH))
    same = (tokens[:, :, None] == tokens[:, None, :]).sum(axis=2) > 1
    return {"tokens": tokens[..., None].astype(np.int64),
            "labels": same[..., None].astype(np.int64)}


def build():
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 11
    with hr.program_guard(main, startup):
        tokens = layers.data("tokens", shape=[LENGTH, 1], dtype="int64")
        labels = layers.data("labels", shape=[LENGTH, 1], dtype="int64")
        x = layers.embedding(tokens, size=[VOCAB, WIDTH])      # [B, L, 1] ids -> [B, L, W]
        x = layers.reshape(x, [-1, LENGTH, WIDTH])
        x = encoder_block(x, WIDTH, HEADS, dropout=0.1)
        logits = layers.reshape(layers.fc(x, size=2, num_flatten_dims=2), [-1, 2])
        flat = layers.reshape(labels, [-1, 1])
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, flat))
        acc = layers.accuracy(layers.softmax(logits), flat)
        test = main.clone(for_test=True)
        hr.optimizer.Adam(learning_rate=3e-3).minimize(loss)
    return main, test, startup, loss, acc


def main(steps=300, seed=0, verbose=True):
    rng = np.random.default_rng(seed)
    held = batch(rng, 256)
    prog, test, startup, loss, acc = build()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for step in range(steps):
        (value,) = exe.run(prog, feed=batch(rng, 32), fetch_list=[loss], scope=scope)
        if verbose and step % 50 == 0:
            print(f"step {step:4d}  loss {float(value):.4f}")
    (accuracy,) = exe.run(test, feed=held, fetch_list=[acc], scope=scope)
    base = float(held["labels"].mean())
    base = max(base, 1 - base)
    if verbose:
        print(f"held-out accuracy {float(accuracy):.3f} (the base rate: {base:.3f})")
    return float(accuracy), base


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    main(parser.parse_args().steps)
