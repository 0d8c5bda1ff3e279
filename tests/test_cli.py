"""The `headrace` command: ops, plugins, show."""
import io

import pytest

import headrace as hr
from headrace.cli import main


def run(*argv):
    out = io.StringIO()
    rc = main(list(argv), out=out)
    return rc, out.getvalue()


def test_ops_lists_slots_attributes_and_kernels():
    rc, out = run("ops", "mul", "relu_grad")
    assert rc == 0
    assert "mul  [plugin headrace-math:math]" in out
    assert "inputs:  X, Y" in out and "x_num_col_dims: int = 1" in out
    assert "kernels: cpu: float32, float64" in out
    assert "relu_grad" in out and "(no gradient)" in out


def test_ops_lists_every_registered_op():
    rc, out = run("ops", "--brief")
    assert rc == 0
    registry = hr.ops.default_registry()
    assert f"{len(registry)} ops from {len(registry.plugins)} plugins" in out  # core + 5
    assert "feed  [plugin headrace:core]  (no gradient, executor-interpreted)" in out
    assert "scale  [plugin headrace:core]" in out and "sum  [plugin headrace:core]" in out


def test_ops_says_how_to_get_the_cuda_kernels_when_numba_is_missing(monkeypatch):
    # As on a machine without numba: the CUDA kernel packages failed to import.
    registry = hr.ops.default_registry()
    monkeypatch.setattr(registry, "unavailable", {"cuda": [
        hr.errors.PluginError("loading cuda kernels from headrace_math.kernels.cuda failed: "
                           "ModuleNotFoundError: No module named 'numba'")]})
    monkeypatch.setattr(hr.ops, "default_registry", lambda: registry)
    rc, out = run("ops", "mul")
    assert rc == 0
    assert "kernels: cpu:" in out
    assert "note: cuda kernels unavailable here" in out
    assert "pip install headrace[cuda]" in out


def test_ops_unknown_type_is_an_error(capsys):
    rc, _ = run("ops", "mull")
    assert rc == 1
    assert "did you mean mul" in capsys.readouterr().err


def test_plugins():
    rc, out = run("plugins")
    assert rc == 0 and "headrace-nn:nn:" in out


def test_show_prints_a_saved_program(tmp_path):
    prog = hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32")
    b.append_op("scale", {"X": x}, {"Out": "y"}, {"scale": 2.0})
    path = tmp_path / "prog.pdmodel"
    path.write_bytes(prog.serialize_to_string())
    rc, out = run("show", str(path))
    assert rc == 0
    assert "var x : float32[-1, 3]" in out and "Out=[y] = scale(X=[x])" in out
    assert "op_callstack" not in out
    rc, out = run("show", "--all-attrs", str(path))
    assert "op_callstack" in out


@pytest.mark.parametrize("content", [b"garbage!", b""])
def test_show_rejects_bad_files(tmp_path, capsys, content):
    path = tmp_path / "bad.pdmodel"
    path.write_bytes(content)
    rc, _ = run("show", str(path))
    assert rc == 1
    assert "headrace show: error:" in capsys.readouterr().err


def test_show_missing_file(capsys):
    rc, _ = run("show", "/nonexistent/prog.pdmodel")
    assert rc == 1 and "cannot read" in capsys.readouterr().err
