"""distributed_digits: the demo CNN trained data-parallel on MPI ranks.

    pip install .[distributed]
    headrace launch -n 2 examples/distributed_digits.py [--epochs 10] [--checkpoint DIR]

Every rank builds the same program; DistributedOptimizer broadcasts the parameters from rank 0
and averages the gradients (one bucketed all-reduce per step). Each epoch every rank trains on
its own part of a shuffled permutation (shard_indices), batch 32 per rank; rank 0 prints the
test accuracy and, with --checkpoint, writes the parameters (all-or-nothing), which all ranks
load back.
"""
import argparse

import numpy as np

import headrace as hr
import headrace_distributed as dist
from headrace.demo import load_digits


def main(epochs=10, batch=32, checkpoint=None):
    env = dist.init()                     # rank and world size from mpiexec
    x_train, y_train, x_test, y_test = load_digits()
    main_prog, startup = hr.Program(), hr.Program()
    main_prog.random_seed = startup.random_seed = 1
    with hr.program_guard(main_prog, startup):
        img = hr.layers.data("img", shape=[-1, 1, 8, 8], dtype="float32")
        label = hr.layers.data("label", shape=[-1, 1], dtype="int64")
        h = hr.layers.conv2d(img, num_filters=16, filter_size=3, padding=1, act="relu")
        h = hr.layers.conv2d(h, num_filters=32, filter_size=3, padding=1, act="relu")
        h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
        h = hr.layers.fc(h, size=64, act="relu")
        logits = hr.layers.fc(h, size=10)
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, label))
        acc = hr.layers.accuracy(hr.layers.softmax(logits), label)
        test_prog = main_prog.clone(for_test=True)
        dist.DistributedOptimizer(hr.optimizer.Adam(learning_rate=3e-3)).minimize(loss)
    exe = hr.Executor(hr.CPUPlace())
    exe.run(startup)
    for epoch in range(epochs):
        part = dist.shard_indices(len(x_train), epoch=epoch, seed=0)
        for i in range(0, len(part) - batch + 1, batch):
            rows = part[i:i + batch]
            exe.run(main_prog, feed={"img": x_train[rows], "label": y_train[rows]},
                    fetch_list=[loss])
        (test_acc,) = exe.run(test_prog, feed={"img": x_test, "label": y_test},
                              fetch_list=[acc])
        if env.rank == 0:
            print(f"epoch {epoch + 1}/{epochs}: test accuracy {float(np.asarray(test_acc)):.3f} "
                  f"({env.world_size} ranks)", flush=True)
    if checkpoint:
        dist.save_checkpoint(exe, checkpoint, main_prog)
        dist.load_checkpoint(exe, checkpoint, main_prog)
        if env.rank == 0:
            print(f"checkpoint written by rank 0 to {checkpoint}, loaded by every rank")
    return float(np.asarray(test_acc))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--checkpoint", help="a directory for rank 0's checkpoint")
    args = ap.parse_args()
    main(args.epochs, args.batch, args.checkpoint)
