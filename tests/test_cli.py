"""The `headrace` command in this process: ops, plugins, show, the demo's exit status, help
texts, one-line usage errors (exit 2). What only a process shows (python -m, --version, broken
pipes, the demo's terminal output and its files) is in test_cli_process.py."""
import argparse
import io

import pytest

import headrace as hr
from headrace import demo
from headrace.cli import build_parser, main
from headrace.proto import framework_pb2 as pb
from headrace.testing.plugin_dists import first_party_plugin


def run(*argv):
    out = io.StringIO()
    rc = main(list(argv), out=out)
    return rc, out.getvalue()


def test_ops_lists_slots_attributes_and_kernels():
    rc, out = run("ops", "mul", "relu_grad")
    assert rc == 0
    assert f"mul  [plugin {first_party_plugin('math')}]" in out
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


@pytest.mark.cuda
def test_ops_lists_the_cuda_kernels_where_numba_imports():
    # In the cudasim and gpu environments every kernel line names both devices.
    rc, out = run("ops", "mul", "sgd", "dropout_grad")
    assert rc == 0 and "unavailable" not in out
    kernels = [line for line in out.splitlines() if line.startswith("    kernels: ")]
    assert len(kernels) == 3 and all("cpu: " in k and "; cuda: " in k for k in kernels)


def test_ops_unknown_type_is_a_one_line_usage_error(capsys):
    rc, _ = run("ops", "mull")
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("headrace ops: error: op 'mull'")
    assert "did you mean mul" in err and err.count("\n") == 1


def test_plugins():
    rc, out = run("plugins")
    assert rc == 0 and f"{first_party_plugin('nn')}:" in out


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
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"headrace show: error: {path} is not a program file")
    assert err.count("\n") == 1


def test_show_missing_file(capsys):
    rc, _ = run("show", "/nonexistent/prog.pdmodel")
    err = capsys.readouterr().err
    assert rc == 2 and err == ("headrace show: error: cannot read /nonexistent/prog.pdmodel: "
                               "No such file or directory\n")


FORGED = "x\n  op 1: Out=[forged] = rm(X=[all])\x1b[2J\u202e"


def test_show_escapes_control_characters_in_names(tmp_path):
    """A crafted file's names cannot forge lines of the listing or reach the terminal raw."""
    prog = hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[2], dtype="float32")
    b.append_op("scale", {"X": x}, {"Out": "y"}, {"scale": 2.0})
    desc = pb.ProgramDesc()
    desc.CopyFrom(prog.desc)
    desc.blocks[0].vars[0].name = FORGED
    desc.blocks[0].ops[0].inputs[0].arguments[0] = FORGED
    desc.blocks[0].ops[0].type = "scale\rop 9: evil"
    path = tmp_path / "crafted.pdmodel"
    path.write_bytes(desc.SerializeToString())
    rc, out = run("show", str(path))
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == 5 and not any(line.startswith("  op 1") for line in lines)
    assert not any(c in out for c in "\x1b\r\u202e")
    escaped = "x\\n  op 1: Out=[forged] = rm(X=[all])\\x1b[2J\\u202e"
    assert lines[2] == f"  var {escaped} : float32[2]"
    assert lines[4] == f"  op 0: Out=[y] = scale\\rop 9: evil(X=[{escaped}]) " \
                       f"{{scale=2.0, bias=0.0, bias_after_scale=True}}"


def _subcommands(parser):
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def test_every_option_of_every_subcommand_has_help_text():
    parser = build_parser()
    commands = _subcommands(parser)
    assert {"ops", "plugins", "show", "demo", "new-plugin"} <= set(commands)
    for p in [parser, *commands.values()]:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help and action.help.strip(), (p.prog, action.dest)
    helps = {c.dest: c.help for c in
             [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)][0]
             ._choices_actions}
    assert set(helps) == set(commands) and all(helps.values())


@pytest.mark.parametrize("argv, message", [
    (["demo", "--epochs", "0"], "argument --epochs: expected a whole number >= 1, got '0'"),
    (["demo", "--epochs", "many"], "argument --epochs: expected a whole number >= 1"),
    (["demo", "--min-accuracy", "1.5"], "argument --min-accuracy: expected a number in [0, 1]"),
    (["demo", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
    (["demo", "--out"], "argument --out: expected one argument"),
    (["show"], "the following arguments are required: file"),
    (["--log-level", "loud", "ops"], "argument --log-level: invalid choice: 'loud'"),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
    ([], "the following arguments are required: COMMAND"),
])
def test_bad_values_are_one_line_usage_errors(capsys, argv, message):
    rc, out = run(*argv)
    err = capsys.readouterr().err
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("headrace: error: ") and message in err and "--help)" in err


def test_new_plugin_bad_name_and_existing_directory_are_usage_errors(tmp_path, capsys):
    rc, _ = run("new-plugin", "Bad Name!", "--dir", str(tmp_path))
    assert rc == 2 and capsys.readouterr().err.startswith("headrace new-plugin: error: ")
    rc, _ = run("new-plugin", "myops", "--dir", str(tmp_path / "missing"))
    err = capsys.readouterr().err
    assert rc == 2 and "does not exist" in err and err.count("\n") == 1


# -- demo: the exit status is the result; the accuracy gate is an option ----------------------

@pytest.fixture
def fake_demo(monkeypatch):
    """demo.run replaced by one returning the given result: the status logic without training
    (test_cli_process.py trains for real)."""
    calls = []

    def use(accuracy, matches=True):
        def fake(**kw):
            calls.append(kw)
            return {"test_accuracy": accuracy, "reload_matches": matches, "seconds": 0.0,
                    "model_dir": kw["out_dir"], "files": []}
        monkeypatch.setattr(demo, "run", fake)
        return calls
    return use


def test_demo_without_a_gate_succeeds_at_any_accuracy(fake_demo):
    calls = fake_demo(0.41)
    rc, out = run("demo", "--epochs", "1", "--seed", "3")
    assert rc == 0 and out == "result: ok (test accuracy 0.4100, reloaded predictions match)\n"
    assert calls[0]["epochs"] == 1 and calls[0]["seed"] == 3 and calls[0]["out_dir"] is None


@pytest.mark.parametrize("accuracy, rc", [(0.9699, 1), (0.97, 0), (0.99, 0)])
def test_demo_min_accuracy_is_the_gate(fake_demo, accuracy, rc):
    fake_demo(accuracy)
    status, out = run("demo", "--min-accuracy", "0.97")
    assert status == rc
    assert out.startswith("result: FAILED: test accuracy 0.9699 is below --min-accuracy 0.97"
                          if rc else "result: ok")


def test_demo_fails_when_the_reloaded_model_differs(fake_demo):
    fake_demo(0.99, matches=False)
    rc, out = run("demo")
    assert rc == 1 and "FAILED: the reloaded model predicts differently" in out


def test_demo_refuses_an_unwritable_out_before_training(fake_demo, tmp_path, capsys):
    calls = fake_demo(0.99)
    (tmp_path / "file").write_text("not a directory")
    rc, out = run("demo", "--out", str(tmp_path / "file"))
    err = capsys.readouterr().err
    assert rc == 2 and out == "" and calls == []   # never started
    assert err.startswith(f"headrace demo: error: --out {tmp_path / 'file'}: ") and \
        "it is a file, not a directory" in err and err.count("\n") == 1
