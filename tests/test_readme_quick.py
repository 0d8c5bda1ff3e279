"""The README's "Using it" example runs as written: it builds the CNN, trains through the
DataLoader and train_loop, and saves an inference model that loads back."""
import pathlib
import re

import numpy as np

import headrace as hr

README = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()


def _quick_example():
    section = README[README.index("## Using it"):]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def test_the_using_it_example_trains_and_saves(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)           # it saves into model/ under the working directory
    scope = {}
    exec(_quick_example(), scope)  # noqa: S102 - the README's own code
    assert np.isfinite(scope["l"]).all()
    exe = hr.Executor(hr.CPUPlace())
    program, feeds, fetches = hr.io.load_inference_model(
        "model", exe, model_filename="digits.pdmodel", params_filename="digits.pdiparams")
    assert feeds == ["img"]
    (out,) = exe.run(program, feed={"img": scope["x"][:4]}, fetch_list=fetches)
    assert out.shape == (4, 10)
