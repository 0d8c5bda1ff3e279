"""Write inference models of paddle.nn.LSTM / GRU / SimpleRNN (the ``rnn`` op), with the inputs
fed and the outputs Paddle computed, for tests/test_paddle_rnn.py to run through headrace.

Needs PaddlePaddle 3.3.1 (legacy static mode; never a headrace dependency):

    pip install paddlepaddle==3.3.1
    python scripts/make_paddle_rnn_fixtures.py [--out tests/data/paddle_rnn]

Each fixture is a directory with ``model.pdmodel``, ``model.pdiparams``, ``io.npz``
(``<run>/in:<feed name>`` and ``<run>/out:<k>`` arrays) and ``ops.txt`` (the op types).
"""
import os
import pathlib

os.environ.setdefault("FLAGS_enable_pir_api", "0")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

import _paddle_inference  # noqa: E402  (beside this script: the fixtures' writer)

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


if __name__ == "__main__":
    _paddle_inference.main(PROGRAMS, HERE, __doc__.splitlines()[0])
