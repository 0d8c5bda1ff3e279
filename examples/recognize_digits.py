"""recognize_digits: an MLP and a CNN on scikit-learn's 8x8 digits.

    python examples/recognize_digits.py [--model mlp|cnn] [--epochs 20]
"""
import argparse

import numpy as np

import headrace as hr
from headrace.demo import load_digits


def mlp(img):
    h = hr.layers.fc(img, size=128, act="relu")
    h = hr.layers.fc(h, size=64, act="relu")
    return hr.layers.fc(h, size=10)


def cnn(img):
    h = hr.layers.conv2d(img, num_filters=16, filter_size=3, padding=1, act="relu")
    h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
    h = hr.layers.conv2d(h, num_filters=32, filter_size=3, padding=1, act="relu")
    h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
    return hr.layers.fc(h, size=10)


def main(model="mlp", epochs=20, seed=0):
    x_train, y_train, x_test, y_test = load_digits()
    main_prog, startup = hr.Program(), hr.Program()
    startup.random_seed = seed
    with hr.program_guard(main_prog, startup):
        img = hr.layers.data("img", shape=[-1, 1, 8, 8], dtype="float32")
        label = hr.layers.data("label", shape=[-1, 1], dtype="int64")
        logits = (mlp if model == "mlp" else cnn)(img)
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, label))
        acc = hr.layers.accuracy(hr.layers.softmax(logits), label)
        test_prog = main_prog.clone(for_test=True)
        hr.optimizer.Adam(learning_rate=2e-3).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(seed)
    for _epoch in range(epochs):
        order = rng.permutation(len(x_train))
        for i in range(0, len(order), 32):
            b = order[i:i + 32]
            exe.run(main_prog, feed={"img": x_train[b], "label": y_train[b]},
                    fetch_list=[loss], scope=scope)
    (test_acc,) = exe.run(test_prog, feed={"img": x_test, "label": y_test}, fetch_list=[acc],
                          scope=scope)
    print(f"{model}: test accuracy {float(test_acc):.4f}")
    return float(test_acc)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--epochs", type=int, default=20)
    args = ap.parse_args()
    main(args.model, args.epochs)
