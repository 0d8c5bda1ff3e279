"""Write inference models of paddle.nn.LSTM / GRU / SimpleRNN (the ``rnn`` op), with the inputs
fed and the outputs Paddle computed, for tests/test_paddle_rnn.py to run through headrace.

Needs PaddlePaddle 3.3.1 (legacy static mode; never a headrace dependency):

    pip install paddlepaddle==3.3.1
    python scripts/make_paddle_rnn_fixtures.py [--out tests/data/paddle_rnn]

Each fixture is a directory with ``model.pdmodel``, ``model.pdiparams``, ``io.npz``
(``<run>/in:<feed name>`` and ``<run>/out:<k>`` arrays) and ``ops.txt`` (the op types).
"""
import argparse
import os
import pathlib
import zlib

os.environ.setdefault("FLAGS_enable_pir_api", "0")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle_rnn"
BATCH, STEPS, INPUT, HIDDEN = 3, 5, 4, 3


def lstm_bidirect():
    """2-layer bidirectional LSTM, batch-major, zero initial states (paddle.full)."""
    x = paddle.static.data("x", [BATCH, STEPS, INPUT], "float32")
    net = paddle.nn.LSTM(INPUT, HIDDEN, num_layers=2, direction="bidirect")
    net.eval()
    out, (h, c) = net(x)
    return [x], [out, h, c], lambda rng: {"x": rng.standard_normal((BATCH, STEPS, INPUT))}


def gru_lengths():
    """GRU with fed initial state and sequence lengths (steps past a length output zeros)."""
    x = paddle.static.data("x", [BATCH, STEPS, INPUT], "float32")
    h0 = paddle.static.data("h0", [1, BATCH, HIDDEN], "float32")
    lens = paddle.static.data("lens", [BATCH], "int64")
    net = paddle.nn.GRU(INPUT, HIDDEN)
    net.eval()
    out, h = net(x, h0, sequence_length=lens)
    return [x, h0, lens], [out, h], lambda rng: {
        "x": rng.standard_normal((BATCH, STEPS, INPUT)),
        "h0": rng.standard_normal((1, BATCH, HIDDEN)),
        "lens": np.array([STEPS, 2, 0], "int64")}


def simple_rnn_relu():
    """2-layer bidirectional SimpleRNN with relu, time-major, with lengths."""
    x = paddle.static.data("x", [STEPS, BATCH, INPUT], "float32")
    lens = paddle.static.data("lens", [BATCH], "int32")
    net = paddle.nn.SimpleRNN(INPUT, HIDDEN, num_layers=2, direction="bidirect",
                              activation="relu", time_major=True)
    net.eval()
    out, h = net(x, sequence_length=lens)
    return [x, lens], [out, h], lambda rng: {
        "x": rng.standard_normal((STEPS, BATCH, INPUT)),
        "lens": np.array([3, STEPS, 1], "int32")}


PROGRAMS = {"lstm_bidirect": lstm_bidirect, "gru_lengths": gru_lengths,
            "simple_rnn_relu": simple_rnn_relu}


def write(name, build, out_dir):
    paddle.seed(1)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        feeds, fetches, feed_fn = build()
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        where = out_dir / name
        where.mkdir(parents=True, exist_ok=True)
        paddle.static.save_inference_model(str(where / "model"), feeds, fetches, exe,
                                           program=main)
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        arrays = {}
        for run in range(2):
            feed = {k: v.astype(np.float32) if v.dtype == np.float64 else v
                    for k, v in feed_fn(rng).items()}
            got = exe.run(main, feed=feed, fetch_list=fetches)
            arrays.update({f"{run}/in:{k}": v for k, v in feed.items()})
            arrays.update({f"{run}/out:{k}": np.asarray(v) for k, v in enumerate(got)})
        np.savez(where / "io.npz", **arrays)
        types = sorted({op.type for op in main.global_block().ops})
        (where / "ops.txt").write_text("\n".join(types) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE))
    args = parser.parse_args()
    paddle.enable_static()
    out_dir = pathlib.Path(args.out)
    for name, build in PROGRAMS.items():
        write(name, build, out_dir)
        print("wrote", out_dir / name)


if __name__ == "__main__":
    main()
