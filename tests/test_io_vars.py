"""headrace.io save/load of variables and atomic writes that keep the previous files."""
import os

import numpy as np
import pytest

import headrace as hr
import headrace.io as hio
from headrace.errors import HeadraceError
from headrace.io import ModelFileError
from headrace.io import atomic as atomic_mod
from headrace.io import checkpoint as checkpoint_mod
from headrace.io.checkpoint import MANIFEST
from headrace.io import persistables as persist_mod

rng = np.random.default_rng(7)


def no_temp_files(directory):
    """No temporary file inside ``directory`` and no staged save beside it."""
    parent = os.path.dirname(str(directory).rstrip("/"))
    return not [n for root, _, files in os.walk(directory) for n in files
                if n.endswith(".tmp")] and \
        not [n for n in os.listdir(parent) if ".hrsave-" in n or ".hrold-" in n]


def listed(directory):
    """The saved files of ``directory``: what Paddle's layout has, without the manifest."""
    return sorted(n for n in os.listdir(directory) if n != MANIFEST)


# -- save_vars / load_vars ---------------------------------------------------------------------

VALUES = {
    "p_f32": rng.standard_normal((3, 2)).astype("float32"),
    "p_f64": rng.standard_normal((4,)),
    "s_i64": np.array([1, -2, 2**40], dtype="int64"),
    "s_bool": np.array([True, False]),
    "s_0d": np.array(0.125, dtype="float32"),
    "s_empty": np.zeros((0, 4), dtype="float32"),
    "s_lod": np.arange(12, dtype="float32").reshape(4, 3),
}
LOD = {"s_lod": [[0, 1, 4]]}


def state_program():
    """Parameters and other persistables of many dtypes/shapes, plus a temporary."""
    prog = hr.Program()
    blk = prog.global_block()
    for name, v in VALUES.items():
        if name.startswith("p_"):
            blk.create_parameter(name, v.shape, dtype=v.dtype)
        else:
            blk.create_var(name=name, shape=v.shape, dtype=v.dtype, persistable=True,
                           lod_level=len(LOD.get(name, [])))
    blk.create_var(name="temp", shape=[2], dtype="float32")
    scope = hr.Scope()
    for name, v in VALUES.items():
        scope.set(name, hr.Tensor(v.copy(), LOD.get(name)))
    return prog, scope


def assert_loaded(scope, names):
    for name in names:
        t = scope.find(name)
        assert isinstance(t, hr.Tensor), name
        assert t.data.dtype == VALUES[name].dtype and t.data.shape == VALUES[name].shape
        np.testing.assert_array_equal(t.data, VALUES[name])
        assert t.lod == LOD.get(name, [])


@pytest.mark.parametrize("filename", [None, "__params__"])
def test_persistables_round_trip(tmp_path, filename):
    prog, scope = state_program()
    exe = hr.Executor()
    saved = hio.save_persistables(exe, str(tmp_path), prog, filename=filename, scope=scope)
    assert saved == sorted(VALUES)
    files = listed(tmp_path)
    assert files == ([filename] if filename else sorted(VALUES))
    fresh = hr.Scope()
    assert hio.load_persistables(exe, str(tmp_path), prog, filename=filename,
                                 scope=fresh) == sorted(VALUES)
    assert_loaded(fresh, VALUES)
    assert fresh.find("temp") is None


@pytest.mark.parametrize("filename", [None, "params.bin"])
def test_params_only_and_global_scope_default(tmp_path, filename):
    prog, scope = state_program()
    exe = hr.Executor()
    with hr.scope_guard(scope):
        assert hio.save_params(exe, str(tmp_path), prog, filename) == ["p_f32", "p_f64"]
    fresh = hr.Scope()
    with hr.scope_guard(fresh):
        hio.load_params(exe, str(tmp_path), prog, filename)
    assert_loaded(fresh, ["p_f32", "p_f64"])
    assert fresh.find("s_i64") is None


def test_save_vars_by_list_and_predicate(tmp_path):
    prog, scope = state_program()
    exe = hr.Executor()
    blk = prog.global_block()
    hio.save_vars(exe, str(tmp_path), prog, vars=[blk.var("s_bool"), "s_i64"], scope=scope)
    assert listed(tmp_path) == ["s_bool", "s_i64"]
    hio.save_vars(exe, str(tmp_path / "p"), prog, predicate=lambda v: v.name.endswith("0d"),
                  scope=scope)
    assert listed(tmp_path / "p") == ["s_0d"]
    fresh = hr.Scope()
    hio.load_vars(exe, str(tmp_path), prog, vars=["s_i64", "s_bool"], scope=fresh)
    assert_loaded(fresh, ["s_i64", "s_bool"])


def test_combined_file_is_streams_in_sorted_name_order(tmp_path):
    prog = hr.Program()
    blk = prog.global_block()
    names = ["b", "a10", "a2", "B", "_z"]
    scope = hr.Scope()
    for i, n in enumerate(names):
        blk.create_var(name=n, shape=[1], dtype="float32", persistable=True)
        scope.set(n, hr.Tensor(np.array([i], "float32")))
    hio.save_persistables(None, str(tmp_path), prog, filename="all", scope=scope)
    data = (tmp_path / "all").read_bytes()
    expected = b"".join(hio.encode_tensor(np.array([names.index(n)], "float32"))
                        for n in sorted(names))
    assert data == expected


def test_save_without_value_fails_before_writing(tmp_path):
    prog, scope = state_program()
    scope.erase("s_i64")
    with pytest.raises(HeadraceError, match="'s_i64' has no value"):
        hio.save_persistables(hr.Executor(), str(tmp_path), prog, scope=scope)
    assert os.listdir(tmp_path) == []


def test_load_rejects_values_that_do_not_match_the_program(tmp_path):
    prog, scope = state_program()
    exe = hr.Executor()
    hio.save_persistables(exe, str(tmp_path), prog, scope=scope)
    (tmp_path / "p_f32").write_bytes(hio.encode_tensor(np.zeros((3, 2), "float64")))
    (tmp_path / MANIFEST).unlink()   # optional on load: without it the declarations still hold
    fresh = hr.Scope()
    with pytest.raises(ModelFileError, match="does not match its declaration") as e:
        hio.load_persistables(exe, str(tmp_path), prog, scope=fresh)
    assert "p_f32" in str(e.value) and "float32[3, 2]" in str(e.value)
    assert fresh.names() == []  # nothing was loaded: every file is checked first


def test_combined_file_with_more_or_fewer_tensors(tmp_path):
    prog, scope = state_program()
    exe = hr.Executor()
    hio.save_persistables(exe, str(tmp_path), prog, filename="c", scope=scope)
    (tmp_path / MANIFEST).unlink()   # the stream's own checks, as for a file Paddle wrote
    data = (tmp_path / "c").read_bytes()
    (tmp_path / "c").write_bytes(data + hio.encode_tensor(np.zeros(1, "float32")))
    with pytest.raises(ModelFileError, match="unexpected bytes") as e:
        hio.load_persistables(exe, str(tmp_path), prog, filename="c", scope=hr.Scope())
    assert str(tmp_path / "c") in str(e.value)
    prog.global_block().create_var(name="zzz", shape=[1], dtype="float32", persistable=True)
    (tmp_path / "c").write_bytes(data)
    with pytest.raises(ModelFileError, match="zzz"):
        hio.load_persistables(exe, str(tmp_path), prog, filename="c", scope=hr.Scope())


def test_missing_file_is_a_clear_error(tmp_path):
    prog, _ = state_program()
    with pytest.raises(ModelFileError, match="no such file") as e:
        hio.load_persistables(hr.Executor(), str(tmp_path), prog, scope=hr.Scope())
    assert str(tmp_path / "p_f32") in str(e.value)
    with pytest.raises(ModelFileError, match="no such file"):
        hio.load_persistables(hr.Executor(), str(tmp_path), prog, filename="nope",
                              scope=hr.Scope())


def test_variable_names_cannot_escape_the_directory(tmp_path):
    prog = hr.Program()
    prog.global_block().create_var(name="../evil", shape=[1], dtype="float32", persistable=True)
    scope = hr.Scope()
    scope.set("../evil", hr.Tensor(np.zeros(1, "float32")))
    with pytest.raises(HeadraceError, match="not a plain relative path"):
        hio.save_persistables(None, str(tmp_path / "d"), prog, scope=scope)
    hio.save_persistables(None, str(tmp_path / "d"), prog, filename="all", scope=scope)
    assert not (tmp_path / "evil").exists()


# -- atomic writes -----------------------------------------------------------------------------

def _saved(directory, filename=None):
    """Persistables saved into ``directory``; returns (program, scope with new values, the
    files' bytes as saved)."""
    prog, scope = state_program()
    hio.save_persistables(None, str(directory), prog, filename=filename, scope=scope)
    before = _files(directory)
    for name, v in VALUES.items():  # new values, so a replaced file would differ
        if v.size:
            scope.set(name, hr.Tensor(np.ones_like(v), LOD.get(name)))
    return prog, scope, before


def _files(directory):
    return {n: (directory / n).read_bytes() for n in listed(directory)}


@pytest.mark.parametrize("filename", [None, "__params__"])
def test_failing_writer_keeps_previous_files(tmp_path, monkeypatch, filename):
    prog, scope, before = _saved(tmp_path, filename)
    real, calls = persist_mod.write_tensor, []

    def failing(f, *args):
        calls.append(1)
        if len(calls) == 3:
            f.write(b"partial")
            raise OSError(28, "No space left on device")
        return real(f, *args)
    monkeypatch.setattr(persist_mod, "write_tensor", failing)
    with pytest.raises(checkpoint_mod.SaveError, match="no space left") as e:
        hio.save_persistables(None, str(tmp_path), prog, filename=filename, scope=scope)
    assert "previous files are unchanged" in str(e.value)
    assert _files(tmp_path) == before
    assert no_temp_files(tmp_path)


@pytest.mark.parametrize("failing", ["exchange", "link", "manifest"])
def test_a_save_failing_at_any_step_keeps_the_previous_checkpoint(tmp_path, monkeypatch,
                                                                  failing):
    # The old checkpoint is replaced in one step (the directory swap): a failure before or at
    # it (keeping a file by linking it, writing the manifest, the swap itself) changes nothing.
    old_dir = tmp_path / "old"
    prog, scope, before = _saved(old_dir)
    (old_dir / "notes.txt").write_bytes(b"not ours")   # a file no save writes: kept

    def fail(*args, **kwargs):
        raise OSError(5, "I/O error")
    target = {"exchange": (checkpoint_mod, "_exchange"), "link": (checkpoint_mod.os, "link"),
              "manifest": (checkpoint_mod, "_write_manifest")}[failing]
    monkeypatch.setattr(*target, fail)
    if failing == "link":   # then the copy of the kept file fails too
        monkeypatch.setattr(checkpoint_mod.shutil, "copy2", fail)
    with pytest.raises(checkpoint_mod.SaveError, match="I/O error") as e:
        hio.save_persistables(None, str(old_dir), prog, scope=scope)
    assert str(old_dir) in str(e.value) and "previous files are unchanged" in str(e.value)
    assert _files(old_dir) == dict(before, **{"notes.txt": b"not ours"})
    assert no_temp_files(old_dir)
    monkeypatch.undo()
    hio.save_persistables(None, str(old_dir), prog, scope=scope)   # and the next save works
    assert _files(old_dir)["notes.txt"] == b"not ours" and _files(old_dir) != before


def test_failing_fsync_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "f"
    hio.write_bytes(str(path), b"old")

    def fsync(fd):
        raise OSError(5, "I/O error")
    monkeypatch.setattr(atomic_mod.os, "fsync", fsync)
    with pytest.raises(OSError):
        hio.write_bytes(str(path), b"new contents")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["f"]


def test_exception_inside_atomic_write(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with hio.atomic_write(str(path)) as f:
            f.write(b"half")
            raise RuntimeError("interrupted")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["f"]
    with hio.atomic_write(str(path)) as f:
        f.write(b"new")
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["f"]


def test_atomic_files_get_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        hio.write_bytes(str(tmp_path / "f"), b"x")
    finally:
        os.umask(umask)
    assert os.stat(tmp_path / "f").st_mode & 0o777 == 0o644
