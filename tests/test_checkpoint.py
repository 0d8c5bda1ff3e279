"""Checkpoints are all-or-nothing, names map to one file each, and loads follow nothing
(issue 10): regression tests for each way a save lost or mixed data, or a load hung or leaked.
The kill test (a save killed at random moments) runs a few kills per save function here and
100 under ``pytest -m fuzz``."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import headrace as hr
import headrace.io as hio
from headrace.errors import HeadraceError
from headrace.io import ModelFileError
from headrace.io.checkpoint import MANIFEST, SaveError


def program_with(names, shape=(2, 3)):
    prog, scope = hr.Program(), hr.Scope()
    for i, n in enumerate(names):
        prog.global_block().create_var(name=n, shape=list(shape), dtype="float32",
                                       persistable=True)
        scope.set(n, hr.Tensor(np.full(shape, i, "float32")))
    return prog, scope


def tree(directory):
    """{relative path: bytes} of every file under ``directory`` (links not followed)."""
    out = {}
    for root, _, files in os.walk(directory):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, directory)] = \
                os.readlink(p).encode() if os.path.islink(p) else open(p, "rb").read()
    return out


def siblings(directory):
    parent = os.path.dirname(str(directory))
    return sorted(n for n in os.listdir(parent) if ".hrsave-" in n or ".hrold-" in n)


# -- names to files ---------------------------------------------------------------------------

@pytest.mark.parametrize("names", [["w", "./w"], ["w", "sub/../w"], ["a/b", "a//b"],
                                   ["w", "w/"], ["/abs"], ["a", "a/b"]])
def test_names_that_share_a_file_are_refused_before_writing(tmp_path, names):
    # Each used to be written to one file with the save reporting success, both names then
    # loading the same value.
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "keep").write_bytes(b"old")
    prog, scope = program_with(names)
    with pytest.raises(SaveError) as e:
        hio.save_persistables(None, str(tmp_path / "ck"), prog, scope=scope)
    assert any(repr(n) in str(e.value) or f"'{n}'" in str(e.value) for n in names), e.value
    assert tree(tmp_path / "ck") == {"keep": b"old"} and not siblings(tmp_path / "ck")


@pytest.mark.parametrize("name, why", [("bad\0name", "NUL byte"), ("x" * 256, "256 bytes"),
                                       ("d/" + "y" * 300, "300 bytes")])
def test_unusable_names_are_a_headrace_error(tmp_path, name, why):
    # A NUL byte or an over-long component gave a raw ValueError / OSError from the OS.
    prog, scope = program_with([name])
    with pytest.raises(SaveError, match=why):
        hio.save_persistables(None, str(tmp_path / "ck"), prog, scope=scope)
    hio.save_persistables(None, str(tmp_path / "ck"), prog, filename="all", scope=scope)


def test_a_linked_directory_in_the_checkpoint_is_not_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "ck").mkdir()
    os.symlink(outside, tmp_path / "ck" / "sub")
    prog, scope = program_with(["sub/w"])
    with pytest.raises(SaveError, match="'sub' .* is a symbolic link"):
        hio.save_persistables(None, str(tmp_path / "ck"), prog, scope=scope)
    assert os.listdir(outside) == []
    # A save of other names keeps the link as a link, and never enters it.
    prog, scope = program_with(["w"])
    hio.save_persistables(None, str(tmp_path / "ck"), prog, scope=scope)
    assert os.path.islink(tmp_path / "ck" / "sub") and os.listdir(outside) == []


# -- loads ------------------------------------------------------------------------------------

def test_a_fifo_in_place_of_a_variable_file_is_refused_not_waited_on(tmp_path):
    prog, scope = program_with(["w"])
    hio.save_persistables(None, str(tmp_path), prog, scope=scope)
    os.unlink(tmp_path / "w")
    os.mkfifo(tmp_path / "w")
    result = []

    def load():
        try:
            hio.load_persistables(None, str(tmp_path), prog, scope=hr.Scope())
        except Exception as e:   # noqa: BLE001 (the test inspects it)
            result.append(e)
    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the load blocked on the FIFO"
    assert isinstance(result[0], ModelFileError) and "not a regular file" in str(result[0])


def test_a_linked_variable_file_is_not_followed_and_its_bytes_not_shown(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"TOP-SECRET-BYTES" * 4)
    (tmp_path / "ck").mkdir()
    prog, scope = program_with(["w"])
    os.symlink(secret, tmp_path / "ck" / "w")
    with pytest.raises(ModelFileError, match="symbolic link") as e:
        hio.load_persistables(None, str(tmp_path / "ck"), prog, scope=hr.Scope())
    assert "TOP-SECRET" not in str(e.value) and "544f502d" not in str(e.value)


@pytest.mark.parametrize("filename", [None, "__params__"])
def test_the_manifest_catches_bit_rot_and_mixed_files(tmp_path, filename):
    prog, scope = program_with(["a", "b"])
    hio.save_persistables(None, str(tmp_path / "one"), prog, filename=filename, scope=scope)
    scope.set("a", hr.Tensor(np.full((2, 3), 7, "float32")))
    scope.set("b", hr.Tensor(np.full((2, 3), 8, "float32")))
    hio.save_persistables(None, str(tmp_path / "two"), prog, filename=filename, scope=scope)
    member = filename or "a"
    # A file from the other save (the same size and a valid tensor: only the hash tells).
    (tmp_path / "one" / member).write_bytes((tmp_path / "two" / member).read_bytes())
    with pytest.raises(ModelFileError, match="does not match the checkpoint's manifest"):
        hio.load_persistables(None, str(tmp_path / "one"), prog, scope=hr.Scope())\
            if filename is None else \
            hio.load_persistables(None, str(tmp_path / "one"), prog, filename=filename,
                                  scope=hr.Scope())
    # One flipped bit in the data.
    raw = bytearray((tmp_path / "two" / member).read_bytes())
    raw[-1] ^= 1
    (tmp_path / "two" / member).write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match="corrupted"):
        hio.load_persistables(None, str(tmp_path / "two"), prog, filename=filename,
                              scope=hr.Scope())


def test_an_inference_model_and_its_parameters_are_checked_together(tmp_path):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[3], dtype="float32")
        y = hr.layers.fc(x, 2)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    hio.save_inference_model(str(tmp_path), ["x"], [y], exe, main, scope=scope)
    model = tmp_path / "__model__"
    model.write_bytes(model.read_bytes() + b"\x00")   # still parses; the manifest objects
    with pytest.raises(ModelFileError, match="manifest"):
        hio.load_inference_model(str(tmp_path), exe, scope=hr.Scope())


# -- all or nothing ---------------------------------------------------------------------------

def test_a_save_replaces_a_checkpoint_in_one_step_and_keeps_other_files(tmp_path):
    ck = tmp_path / "ck"
    prog, scope = program_with(["a", "sub/b"])
    hio.save_persistables(None, str(ck), prog, scope=scope)
    (ck / "README.txt").write_bytes(b"mine")
    inode = os.stat(ck).st_ino
    scope.set("a", hr.Tensor(np.full((2, 3), 5, "float32")))
    hio.save_persistables(None, str(ck), prog, scope=scope)
    assert os.stat(ck).st_ino != inode   # a new directory, swapped in whole
    assert (ck / "README.txt").read_bytes() == b"mine"
    fresh = hr.Scope()
    hio.load_persistables(None, str(ck), prog, scope=fresh)
    assert fresh.find("a").numpy()[0, 0] == 5 and fresh.find("sub/b").numpy()[0, 0] == 1
    assert not siblings(ck)


def test_a_save_into_the_working_directory_renames_in_place(tmp_path, monkeypatch):
    # The one place the directory cannot be swapped (the process lives in it): files are
    # renamed one by one, the manifest last, so a mix is still detected on load.
    monkeypatch.chdir(tmp_path)
    prog, scope = program_with(["a", "b"])
    hio.save_persistables(None, ".", prog, scope=scope)
    scope.set("a", hr.Tensor(np.full((2, 3), 9, "float32")))
    hio.save_persistables(None, ".", prog, scope=scope)
    fresh = hr.Scope()
    hio.load_persistables(None, ".", prog, scope=fresh)
    assert fresh.find("a").numpy()[0, 0] == 9
    assert sorted(os.listdir(".")) == [MANIFEST, "a", "b"]


_KILLED_SAVER = """
import sys, numpy as np, headrace as hr, headrace.io as hio
kind, target = sys.argv[1], sys.argv[2]
names = ["a", "b", "c", "sub/d"]
prog, scope = hr.Program(), hr.Scope()
for n in names:
    prog.global_block().create_var(name=n, shape=[64, 64], dtype="float32", persistable=True)
main, startup = hr.Program(), hr.Program()
with hr.program_guard(main, startup):
    x = hr.layers.data("x", shape=[4], dtype="float32")
    y = hr.layers.fc(x, 4)
exe = hr.Executor()
exe.run(startup, scope=scope)
version = 0
while True:
    version += 1
    for n in names:
        scope.set(n, hr.Tensor(np.full((64, 64), version, "float32")))
    if kind == "persistables":
        hio.save_persistables(None, target, prog, scope=scope)
    elif kind == "combined":
        hio.save_persistables(None, target, prog, filename="__params__", scope=scope)
    else:   # inference: parameters one file each, or combined
        for p in main.global_block().all_parameters():
            scope.set(p.name, hr.Tensor(np.full(p.shape, version, "float32")))
        hio.save_inference_model(target, ["x"], [y], exe, main, scope=scope,
                                 params_filename="__params__" if kind == "inference_combined"
                                 else None)
    print(version, flush=True)
"""


def _check_survivor(kind, target):
    """The directory after a kill: one whole version, loadable; returns that version."""
    names = ["a", "b", "c", "sub/d"]
    prog = hr.Program()
    for n in names:
        prog.global_block().create_var(name=n, shape=[64, 64], dtype="float32",
                                       persistable=True)
    scope = hr.Scope()
    if kind.startswith("inference"):
        program, _, _ = hio.load_inference_model(
            target, hr.Executor(), scope=scope,
            params_filename="__params__" if kind == "inference_combined" else None)
        return {float(scope.find(v.name).numpy().flat[0])
                for v in program.global_block().vars.values() if hio.is_persistable(v)}
    hio.load_persistables(None, target, prog, scope=scope,
                          filename="__params__" if kind == "combined" else None)
    return {float(scope.find(n).numpy().flat[0]) for n in names}


def _kill_loop(tmp_path, kind, kills, seed):
    rng = random.Random(seed)
    target = str(tmp_path / kind)
    script = tmp_path / "saver.py"
    script.write_text(textwrap.dedent(_KILLED_SAVER))
    for _ in range(kills):
        p = subprocess.Popen([sys.executable, str(script), kind, target],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Wait for the first save to land, then kill at a random moment of the later ones.
        first = p.stdout.readline()
        assert first, p.stderr.read()
        time.sleep(rng.uniform(0, 0.05))
        p.send_signal(signal.SIGKILL)
        p.wait()
        versions = _check_survivor(kind, target)
        assert len(versions) == 1, f"{kind}: a mix of saves {versions}"
    # The next save removes what killed saves left beside the target.
    prog, scope = program_with(["z"])
    hio.save_vars(None, target, prog, scope=scope)
    assert not siblings(target), siblings(target)
    assert not [n for n in os.listdir(target) if n.startswith(".hrsave")]


@pytest.mark.parametrize("kind", ["persistables", "combined", "inference",
                                  "inference_combined"])
def test_killed_saves_leave_the_old_or_the_new_checkpoint(tmp_path, kind):
    _kill_loop(tmp_path, kind, kills=4, seed=kind)


@pytest.mark.fuzz
@pytest.mark.parametrize("kind", ["persistables", "combined", "inference",
                                  "inference_combined"])
def test_killed_saves_leave_the_old_or_the_new_checkpoint_100_kills(tmp_path, kind):
    _kill_loop(tmp_path, kind, kills=100, seed=kind)


def test_every_save_error_is_a_headrace_error(tmp_path):
    # A target that is a file, not a directory: the OS error is wrapped, with the path.
    (tmp_path / "f").write_bytes(b"x")
    prog, scope = program_with(["w"])
    with pytest.raises(HeadraceError, match="is a file, not a directory"):
        hio.save_persistables(None, str(tmp_path / "f"), prog, scope=scope)
    assert (tmp_path / "f").read_bytes() == b"x"
    # A target that links to a directory is saved where it points; the link stays.
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    hio.save_persistables(None, str(tmp_path / "link"), prog, scope=scope)
    assert os.path.islink(tmp_path / "link") and (tmp_path / "real" / "w").is_file()
