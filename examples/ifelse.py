"""The seeds' ``ifelse`` program (the programs design document), trained.

Each row of the minibatch takes one branch: rows with x > 15 compute ``d = x + y`` and
``softmax(d)``, the others ``d = fc(z)`` and ``d + 1``; ``ie()`` merges the outputs back in
row order. The false branch's fc learns ``3 z + 2`` for its rows (its weights exist only
inside that branch); the rows of the true branch pass through unchanged::

    python examples/ifelse.py [--steps 300]
"""
import argparse

import numpy as np

import headrace as hr
from headrace import layers


def build():
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[1], dtype="float32")       # block 0
        z = layers.data("z", shape=[1], dtype="float32")
        target = layers.data("target", shape=[1], dtype="float32")
        y = layers.fill_constant([1], "float32", 1.0)
        cond = layers.greater_than(x, layers.fill_constant([1], "float32", 15.0))
        ie = layers.IfElse(cond)
        with ie.true_block():                                    # block 1
            d = layers.elementwise_add(ie.input(x), y)
            ie.output(d, layers.softmax(d))
        with ie.false_block():                                   # block 2
            d = layers.fc(ie.input(z), size=1)
            ie.output(d, layers.scale(d, bias=1.0))
        o1, o2 = ie()
        loss = layers.mse(o1, target)
        hr.optimizer.Adam(learning_rate=0.05).minimize(loss)
    return main, startup, (o1, o2, loss)


def batch(rng, n=32):
    x = rng.choice([10.0, 20.0, 30.0], size=(n, 1)).astype(np.float32)
    z = rng.uniform(-1, 1, size=(n, 1)).astype(np.float32)
    target = np.where(x > 15, x + 1, 3 * z + 2).astype(np.float32)
    return {"x": x, "z": z, "target": target}


def main(steps=300, seed=0, verbose=True):
    rng = np.random.default_rng(seed)
    prog, startup, (o1, o2, loss) = build()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    first = last = None
    for step in range(steps):
        (value,) = exe.run(prog, feed=batch(rng), fetch_list=[loss], scope=scope)
        last = float(value)
        first = last if first is None else first
        if verbose and step % 50 == 0:
            print(f"step {step:4d}  loss {last:.5f}")
    # The seed's own minibatch: x = [10, 20, 30].
    feed = {"x": np.array([[10.0], [20.0], [30.0]], np.float32),
            "z": np.array([[0.5], [0.0], [-0.5]], np.float32),
            "target": np.zeros((3, 1), np.float32)}
    out1, out2 = exe.run(prog.clone(for_test=True), feed=feed, fetch_list=[o1, o2],
                         scope=scope)
    if verbose:
        print(f"loss {first:.4f} -> {last:.6f}; o1 = {out1.ravel()}, o2 = {out2.ravel()}")
    return first, last, out1, out2


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    main(parser.parse_args().steps)
