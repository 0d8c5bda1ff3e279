"""Inference models of paddle.nn.LSTM (2 layers, bidirectional), paddle.nn.GRU (with an initial
state and sequence lengths) and paddle.nn.SimpleRNN (relu, time-major, 2 layers,
bidirectional, lengths) saved by PaddlePaddle 3.3.1 (legacy static mode) load here and give
Paddle's numbers: the ``rnn`` op, its WeightList as Paddle flattens it, its SequenceLength.

The fixtures are made by ``scripts/make_paddle_rnn_fixtures.py`` (with Paddle); ``tox -e
paddle`` makes them afresh and runs this file on them (``HEADRACE_PADDLE_RNN``).
"""
import os
import pathlib

import numpy as np
import pytest

import headrace as hr

ROOT = pathlib.Path(os.environ.get("HEADRACE_PADDLE_RNN") or
                    pathlib.Path(__file__).resolve().parent / "data" / "paddle_rnn")
FIXTURES = sorted(p.name for p in ROOT.iterdir() if (p / "model.pdmodel").exists())
MODES = {"lstm_bidirect": "LSTM", "gru_lengths": "GRU", "simple_rnn_relu": "RNN_RELU"}


def test_every_mode_has_a_fixture():
    assert set(MODES) <= set(FIXTURES)


@pytest.mark.parametrize("name", FIXTURES)
def test_paddle_rnn_model_gives_paddles_numbers(name):
    where = ROOT / name
    exe, scope = hr.Executor(), hr.Scope()
    program, feed_names, fetch_targets = hr.io.load_inference_model(
        str(where), exe, model_filename="model.pdmodel", params_filename="model.pdiparams",
        scope=scope)
    (op,) = [o for o in program.global_block().ops if o.type == "rnn"]
    assert op.attr("mode") == MODES[name]
    assert all(n in scope for n in op.input("WeightList"))
    io = np.load(where / "io.npz")
    for run in sorted({key.split("/")[0] for key in io.files}):
        feed = {n: io[f"{run}/in:{n}"] for n in feed_names}
        got = exe.run(program, feed=feed, fetch_list=fetch_targets, scope=scope)
        for k, value in enumerate(got):
            want = io[f"{run}/out:{k}"]
            assert value.dtype == want.dtype and value.shape == want.shape, \
                f"{name} run {run} output {k}"
            np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} run {run} output {k}")
