"""fit_a_line: linear regression on scikit-learn's diabetes data with SGD.

    python examples/fit_a_line.py [--epochs 100]

Prints the test mean squared error beside that of the closed-form least-squares fit.
"""
import argparse

import numpy as np
from sklearn.datasets import load_diabetes

import headrace as hr


def main(epochs=100, seed=0):
    data = load_diabetes()
    x = data.data.astype(np.float32)
    y = ((data.target - data.target.mean()) / data.target.std()).astype(np.float32)[:, None]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    train, test = order[:350], order[350:]
    main_prog, startup = hr.Program(), hr.Program()
    startup.random_seed = seed
    with hr.program_guard(main_prog, startup):
        feat = hr.layers.data("x", shape=[-1, x.shape[1]], dtype="float32")
        target = hr.layers.data("y", shape=[-1, 1], dtype="float32")
        pred = hr.layers.fc(feat, size=1)
        loss = hr.layers.mean(hr.layers.square_error_cost(pred, target))
        test_prog = main_prog.clone(for_test=True)
        hr.optimizer.SGD(learning_rate=0.5).minimize(loss)
    # Batches of 32 training rows, in a fixed order, prepared by the loader's reader thread.
    loader = hr.io.DataLoader.from_generator(feed_list=[feat, target], capacity=4)
    loader.set_sample_generator(hr.io.reader.from_arrays(x[train], y[train]), batch_size=32,
                                drop_last=False)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for _epoch in range(epochs):
        for feed in loader():
            exe.run(main_prog, feed=feed, fetch_list=[loss], scope=scope)
    (mse,) = exe.run(test_prog, feed={"x": x[test], "y": y[test]}, fetch_list=[loss],
                     scope=scope)
    a = np.c_[x[train], np.ones(len(train))]
    coef, *_ = np.linalg.lstsq(a, y[train], rcond=None)
    lstsq = float(np.mean((np.c_[x[test], np.ones(len(test))] @ coef - y[test]) ** 2))
    print(f"test MSE {float(mse):.4f} (least squares: {lstsq:.4f})")
    return float(mse), lstsq


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=100)
    main(ap.parse_args().epochs)
