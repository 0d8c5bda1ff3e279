"""The control-flow examples, trained to a stated quality: the seeds' ifelse program, a
while_loop with a data-dependent stopping rule, and a character-level DynamicRNN language
model on text that ships with Python."""
import importlib.util
import pathlib

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
