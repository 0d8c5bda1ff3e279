"""recognize_digits: an MLP and a CNN on scikit-learn's 8x8 digits.

    python examples/recognize_digits.py [--model mlp|cnn] [--epochs 20]

The training images come through a DataLoader (shuffled each epoch by a seeded reader) and
hr.io.train_loop runs the epochs: a progress bar on a terminal, and per epoch the training
loss and accuracy and those of the test split.
"""
import argparse

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


def main(model="mlp", epochs=20, seed=0, verbose=True):
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
    train = hr.io.DataLoader.from_generator(feed_list=[img, label], capacity=8)
    train.set_sample_generator(
        hr.io.reader.shuffle(hr.io.reader.from_arrays(x_train, y_train),
                             buf_size=len(x_train), seed=seed),
        batch_size=32, drop_last=False)
    test = hr.io.DataLoader.from_generator(feed_list=[img, label], capacity=2)
    test.set_sample_generator(hr.io.reader.from_arrays(x_test, y_test), batch_size=256,
                              drop_last=False)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    history = hr.io.train_loop(exe, main_prog, train, {"loss": loss, "accuracy": acc},
                               epochs=epochs, scope=scope, test=(test_prog, test),
                               verbose=verbose)
    test_acc = history[-1]["test_accuracy"]
    print(f"{model}: test accuracy {test_acc:.4f}")
    return test_acc


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--epochs", type=int, default=20)
    args = ap.parse_args()
    main(args.model, args.epochs)
