"""The README's control-flow snippets build, train a step and run as written."""
import pathlib
import re

import numpy as np

import headrace as hr
from headrace.runtime.tensor import create_lod_tensor

README = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()


def _snippets():
    section = README[README.index("### Control flow and recurrent networks"):]
    section = section[:section.index("Examples in `examples/`")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _run(code, names, feed, extra=None):
    main, startup = hr.Program(), hr.Program()
    scope = {"hr": hr, **(extra or {})}
    with hr.program_guard(main, startup):
        exec(code, scope)  # noqa: S102 - the README's own code
        outs = [scope[n] for n in names]
        loss = hr.layers.mean(outs[0])
        hr.optimizer.SGD(0.1).minimize(loss)
    exe = hr.Executor()
    s = hr.Scope()
    exe.run(startup, scope=s)
    return main, exe.run(main, feed=feed, fetch_list=outs + [loss], scope=s)


def test_the_readme_shows_two_snippets():
    assert len(_snippets()) == 2


def test_the_seeds_ifelse_snippet():
    code = _snippets()[0]
    x = np.array([[10.0], [20.0], [30.0]], np.float32)
    z = np.array([[0.5], [0.0], [-0.5]], np.float32)
    main, (o1, o2, _) = _run(code, ["o1", "o2"], {"x": x, "z": z})
    np.testing.assert_allclose(o1[1:].ravel(), [21.0, 31.0])  # x + 1 for x > 15
    np.testing.assert_allclose(o2[1:].ravel(), [1.0, 1.0])    # softmax of one element
    np.testing.assert_allclose(o2[0], o1[0] + 1, rtol=1e-6)   # the false branch's d + 1
    assert "conditional_block_grad" in [op.type for op in main.global_block().ops]


def test_the_dynamic_rnn_snippet():
    code = _snippets()[1]
    ids = create_lod_tensor(np.array([[1], [2], [3], [4], [5]], np.int64), [[2, 0, 3]])
    main, (logits, loss) = _run(code, ["logits"], {"chars": ids}, {"vocab": 10})
    assert logits.shape == (5, 10) and np.isfinite(loss).all()
    assert "while_grad" in [op.type for op in main.global_block().ops]
