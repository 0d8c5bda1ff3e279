"""Training end to end: the demo, the examples (control flow included), and the seeds'
`hidden.param.grad` fetch."""
import importlib.util
import pathlib

import numpy as np
import pytest

import headrace as hr

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_trains_saves_and_reloads(tmp_path):
    from headrace.demo import run
    result = run(out_dir=str(tmp_path), quiet=True)
    assert result["test_accuracy"] >= 0.97
    assert result["reload_matches"]
    assert result["files"] == ["digits.pdiparams", "digits.pdmodel"]
    assert result["seconds"] < 120


def test_demo_command_line(tmp_path, capsys):
    from headrace.cli import main
    assert main(["demo", "--epochs", "15", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "test accuracy" in out and "predictions match" in out


def test_fit_a_line_matches_least_squares():
    mse, lstsq = example("fit_a_line").main(epochs=60)
    assert mse < 1.15 * lstsq


@pytest.mark.parametrize("model, floor", [("mlp", 0.95), ("cnn", 0.95)])
def test_recognize_digits(model, floor):
    assert example("recognize_digits").main(model, epochs=10) >= floor


def test_word2vec_shared_embedding_learns():
    acc, baseline = example("word2vec").main(epochs=4)
    assert acc > 2.5 * baseline


# -- control flow: the seeds' ifelse program, a while_loop stopping on the data, a DynamicRNN
# language model on text that ships with Python.

def test_the_seeds_ifelse_program_trains_its_false_branch():
    first, last, o1, o2 = example("ifelse").main(steps=300, verbose=False)
    assert first > 0.5 and last < 1e-3
    # x = [10, 20, 30]: row 0 takes the false branch (fc learned 3 z + 2 at z = 0.5), rows 1
    # and 2 the true one (x + 1; softmax of one element is 1).
    np.testing.assert_allclose(o1.ravel(), [3.5, 21.0, 31.0], atol=0.02)
    np.testing.assert_allclose(o2.ravel(), [4.5, 1.0, 1.0], atol=0.02)


def test_newton_square_roots_stop_on_the_data_and_differentiate():
    steps, root, grad = example("while_loop").main(verbose=False)
    a = np.array([2.0, 9.0, 0.25, 1e4])
    assert 5 < steps < 30  # decided by the data (1e4 needs the most), not a fixed count
    np.testing.assert_allclose(root, np.sqrt(a), rtol=1e-12)
    np.testing.assert_allclose(grad, 0.5 / np.sqrt(a), rtol=1e-8)


def test_char_lm_perplexity_falls():
    before, after, vocab = example("char_lm").main(steps=150, verbose=False)
    assert before > 0.6 * vocab   # untrained: close to uniform over the characters
    assert after < 0.35 * before


def test_sequence_tagger_with_dynamic_gru_learns_the_bracket_depth():
    accuracy, base = example("sequence_tagger").main(steps=150, verbose=False)
    assert base < 0.8 and accuracy > 0.97


def test_transformer_block_learns_a_task_that_needs_attention():
    accuracy, base = example("transformer_block").main(steps=150, verbose=False)
    assert base < 0.6 and accuracy > 0.9


def test_text_classifier_with_stacked_lstms_learns_word_order():
    assert example("text_classifier").main(steps=120, verbose=False) > 0.95


def test_text_classifier_with_sequence_convolutions_learns_a_windowed_word_order():
    # "good" right before "not" within 3 words (the example's conv rule): Fluid's
    # convolution_net, sequence_conv over 3 and 4 words, learns it in 40 steps (under 1 s).
    assert example("text_classifier").main(steps=40, verbose=False, model="conv") > 0.95


def test_fetch_a_layer_parameter_and_its_gradient():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 3], dtype="float32")
        hidden = hr.layers.fc(x, size=2)
        loss = hr.layers.mean(hidden)
        hr.optimizer.SGD(learning_rate=0.0).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    xv = np.arange(12, dtype=np.float32).reshape(4, 3)
    w, g = exe.run(main, feed={"x": xv}, fetch_list=[hidden.param, hidden.param.grad],
                   scope=scope)
    assert w.shape == (3, 2)
    # d mean(x @ w + b) / dw = x^T @ ones / (N * 2)
    np.testing.assert_allclose(g, xv.T @ np.ones((4, 2)) / 8, rtol=1e-6)


def test_training_reduces_the_loss_with_every_optimizer():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((64, 5)).astype(np.float32)
    yv = (xv @ rng.standard_normal((5, 1))).astype(np.float32)
    for opt in (hr.optimizer.SGD(0.1), hr.optimizer.Momentum(0.05, momentum=0.9),
                hr.optimizer.Momentum(0.05, momentum=0.9, use_nesterov=True),
                hr.optimizer.Adagrad(0.3), hr.optimizer.Adam(0.05),
                # RMSProp's steps are about lr each: at 0.01, 40 of them reached a fifth of
                # the first loss from some initializations only (the seed decided).
                hr.optimizer.RMSProp(0.05)):
        main, startup = hr.Program(), hr.Program()
        startup.random_seed = 3
        with hr.program_guard(main, startup):
            x = hr.layers.data("x", shape=[-1, 5], dtype="float32")
            y = hr.layers.data("y", shape=[-1, 1], dtype="float32")
            loss = hr.layers.mean(hr.layers.square_error_cost(hr.layers.fc(x, size=1), y))
            opt.minimize(loss)
        exe, scope = hr.Executor(), hr.Scope()
        exe.run(startup, scope=scope)
        losses = [float(exe.run(main, feed={"x": xv, "y": yv}, fetch_list=[loss],
                                scope=scope)[0]) for _ in range(40)]
        assert losses[-1] < 0.2 * losses[0], (type(opt).__name__, losses[0], losses[-1])
