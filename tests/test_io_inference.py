"""headrace.io inference models: save/load, pruning, errors, corrupt files, failed saves."""
import os

import numpy as np
import pytest

import headrace as hr
import headrace.io as hio
from headrace.errors import HeadraceError
from headrace.io.checkpoint import MANIFEST
from headrace.io import ModelFileError
from headrace.io import persistables as persist_mod
from headrace.proto import framework_pb2 as pb

rng = np.random.default_rng(7)


def mlp(extra_branch=False):
    """x[-1, 3] -> mul(w) -> + b -> relu -> scale(2) ; returns (program, {name: var})."""
    prog = hr.Program()
    blk = prog.global_block()
    x = blk.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    w = blk.create_parameter("w", [3, 2])
    b = blk.create_parameter("b", [2])
    blk.append_op("mul", {"X": x, "Y": w}, {"Out": "h"})
    blk.append_op("elementwise_add", {"X": "h", "Y": b}, {"Out": "h2"})
    blk.append_op("relu", {"X": "h2"}, {"Out": "y"})
    blk.append_op("scale", {"X": "y"}, {"Out": "z"}, {"scale": 2.0, "bias": 0.5})
    if extra_branch:  # a branch the targets do not need, with a parameter of its own
        blk.create_parameter("unused_w", [3, 5])
        blk.append_op("mul", {"X": x, "Y": "unused_w"}, {"Out": "other"})
    return prog, blk.vars


def mlp_scope(extra_branch=False):
    scope = hr.Scope()
    values = {"w": rng.standard_normal((3, 2)).astype("float32"),
              "b": rng.standard_normal(2).astype("float32")}
    if extra_branch:
        values["unused_w"] = rng.standard_normal((3, 5)).astype("float32")
    for k, v in values.items():
        scope.set(k, hr.Tensor(v))
    return scope, values


def expected_mlp(x, values):
    return np.maximum(x @ values["w"] + values["b"], 0) * 2 + 0.5


def no_temp_files(directory):
    """No temporary file inside ``directory`` and no staged save beside it."""
    parent = os.path.dirname(str(directory).rstrip("/"))
    return not [n for root, _, files in os.walk(directory) for n in files
                if n.endswith(".tmp")] and \
        not [n for n in os.listdir(parent) if ".hrsave-" in n or ".hrold-" in n]


def listed(directory):
    """The saved files of ``directory``: what Paddle's layout has, without the manifest."""
    return sorted(n for n in os.listdir(directory) if n != MANIFEST)


def _files(directory):
    return {n: (directory / n).read_bytes() for n in listed(directory)}


# -- inference models --------------------------------------------------------------------------

@pytest.mark.parametrize("model, params, files", [
    (None, None, ["__model__", "b", "w"]),
    (None, "__params__", ["__model__", "__params__"]),
    ("inference.pdmodel", None, ["inference.pdiparams", "inference.pdmodel"]),
    ("m.pdmodel", "weights", ["m.pdmodel", "weights"]),
])
def test_inference_model_round_trip(tmp_path, model, params, files):
    prog, v = mlp()
    scope, values = mlp_scope()
    exe = hr.Executor()
    assert hio.save_inference_model(str(tmp_path), ["x"], [v["z"]], exe, prog, model, params,
                                    scope=scope) == ["z"]
    assert listed(tmp_path) == files
    fresh = hr.Scope()
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, model, params,
                                                       scope=fresh)
    assert feeds == ["x"] and [f.name for f in fetches] == ["z"]
    assert sorted(fresh.names()) == ["b", "w"]
    x = rng.standard_normal((5, 3)).astype("float32")
    (out,) = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=fresh)
    np.testing.assert_allclose(out, expected_mlp(x, values), rtol=1e-5)
    (again,) = exe.run(program, feed={"x": x}, scope=fresh)  # fetch ops give the targets
    np.testing.assert_array_equal(again, out)


def test_load_inference_model_from_a_path_prefix(tmp_path):
    prog, v = mlp()
    scope, values = mlp_scope()
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], ["z"], exe, prog, "net.pdmodel", scope=scope)
    program, feeds, fetches = hio.load_inference_model(str(tmp_path / "net"), exe,
                                                       scope=hr.Scope())
    assert feeds == ["x"] and fetches[0].name == "z"


def test_inference_program_is_pruned_and_marked(tmp_path):
    prog, v = mlp(extra_branch=True)
    blk = prog.global_block()
    with prog.op_role_guard(1):  # a backward op: clone(for_test=True) drops it
        blk.append_op("scale", {"X": "z"}, {"Out": "z_grad_like"})
    scope, values = mlp_scope(extra_branch=True)
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], [v["y"]], exe, prog, scope=scope)
    assert listed(tmp_path) == ["__model__", "b", "w"]  # no unused_w
    desc = pb.ProgramDesc()
    desc.ParseFromString((tmp_path / "__model__").read_bytes())
    ops = desc.blocks[0].ops
    assert [o.type for o in ops] == ["feed", "mul", "elementwise_add", "relu", "fetch"]
    assert [o.is_target for o in ops] == [False, False, False, True, False]
    names = {d.name: d for d in desc.blocks[0].vars}
    assert set(names) == {"feed", "fetch", "x", "w", "b", "h", "h2", "y"}
    assert names["feed"].type.type == pb.VarType.FEED_MINIBATCH and names["feed"].persistable
    assert names["fetch"].type.type == pb.VarType.FETCH_LIST and names["fetch"].persistable
    assert prog.global_block().has_var("unused_w")  # the user's program is untouched
    assert len(prog.global_block().ops) == 6


def test_inference_model_of_a_loaded_model_and_multiple_targets(tmp_path):
    prog, v = mlp()
    scope, values = mlp_scope()
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path / "a"), ["x"], ["z", "h"], exe, prog, scope=scope)
    program, feeds, fetches = hio.load_inference_model(str(tmp_path / "a"), exe, scope=scope)
    assert [f.name for f in fetches] == ["z", "h"]
    # Saving a loaded model again replaces its feed/fetch ops instead of doubling them.
    hio.save_inference_model(str(tmp_path / "b"), ["x"], fetches[:1], exe, program,
                             scope=scope)
    program2, _, fetches2 = hio.load_inference_model(str(tmp_path / "b"), exe, scope=scope)
    assert [o.type for o in program2.global_block().ops].count("feed") == 1
    x = rng.standard_normal((2, 3)).astype("float32")
    (out,) = exe.run(program2, feed={"x": x}, fetch_list=fetches2, scope=scope)
    np.testing.assert_allclose(out, expected_mlp(x, values), rtol=1e-5)


def test_inference_model_errors(tmp_path):
    prog, v = mlp()
    scope, _ = mlp_scope()
    exe = hr.Executor()
    with pytest.raises(HeadraceError, match="'x' .*neither fed nor computed"):
        hio.save_inference_model(str(tmp_path), [], ["z"], exe, prog, scope=scope)
    with pytest.raises(HeadraceError, match="'nope' is not a variable"):
        hio.save_inference_model(str(tmp_path), ["nope"], ["z"], exe, prog, scope=scope)
    with pytest.raises(HeadraceError, match="needs at least one target"):
        hio.save_inference_model(str(tmp_path), ["x"], [], exe, prog, scope=scope)
    assert os.listdir(tmp_path) == []
    with pytest.raises(ModelFileError, match="no model file") as e:
        hio.load_inference_model(str(tmp_path), exe)
    assert "__model__" in str(e.value)
    (tmp_path / "__model__").write_bytes(b"\xff\xff\xff garbage")
    with pytest.raises(ModelFileError, match="not a valid program"):
        hio.load_inference_model(str(tmp_path), exe)


def test_program_only_writes_no_parameters(tmp_path):
    prog, v = mlp()
    hio.save_inference_model(str(tmp_path), ["x"], ["z"], hr.Executor(), prog,
                             program_only=True, scope=hr.Scope())
    assert listed(tmp_path) == ["__model__"]


def test_feed_as_target_and_model_without_parameters(tmp_path):
    prog = hr.Program()
    blk = prog.global_block()
    blk.create_var(name="x", shape=[-1, 2], dtype="float32", need_check_feed=True)
    blk.append_op("scale", {"X": "x"}, {"Out": "y"}, {"scale": 3.0})
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], ["y", "x"], exe, prog, scope=hr.Scope())
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, scope=hr.Scope())
    x = np.ones((1, 2), "float32")
    y, x2 = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=hr.Scope())
    np.testing.assert_array_equal(y, 3 * x)
    np.testing.assert_array_equal(x2, x)


@pytest.mark.cuda
def test_save_and_load_on_a_cuda_place(tmp_path):
    place = hr.CUDAPlace(0)
    try:
        device = place.module()
    except hr.runtime.DeviceUnavailableError as e:
        pytest.skip(str(e))
    prog, v = mlp()
    scope, values = mlp_scope()
    for k, a in values.items():
        scope.set(k, hr.Tensor(device.to_device(a, place)))
    exe = hr.Executor(place)
    # Target y: scale has no CUDA kernel.
    hio.save_inference_model(str(tmp_path), ["x"], ["y"], exe, prog, params_filename="p",
                             scope=scope)
    fresh = hr.Scope()
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, params_filename="p",
                                                       scope=fresh)
    assert device.is_array(fresh.find("w").data)
    x = rng.standard_normal((2, 3)).astype("float32")
    (out,) = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=fresh)
    np.testing.assert_allclose(out, np.maximum(x @ values["w"] + values["b"], 0), rtol=1e-5)
    hio.save_params(exe, str(tmp_path / "again"), program, scope=fresh)  # device -> host
    for k, a in values.items():
        np.testing.assert_array_equal(hio.read_tensor_file(str(tmp_path / "again" / k))[0], a)


def test_inference_program_keeps_what_sub_blocks_need(tmp_path):
    # o = conditional_block(c){ o = mul(x, w) } reads w only inside its sub-block; a second,
    # pruned conditional_block owns a sub-block with a parameter of its own.
    prog = hr.Program()
    blk = prog.global_block()
    blk.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    blk.create_var(name="c", shape=[1], dtype="bool", need_check_feed=True)
    for name in ("o", "d"):
        blk.create_var(name=name, shape=[-1, 2], dtype="float32")
    blk.create_parameter("w", [3, 2])
    blk.create_parameter("dead_w", [3, 2])
    for out, param in (("o", "w"), ("d", "dead_w")):
        with prog.block_guard() as sub:
            sub.append_op("mul", {"X": "x", "Y": param}, {"Out": out})
        blk.append_op("conditional_block", {"Cond": ["c"], "Input": ["x"]},
                      {"Out": [out], "Scope": [f"scope_{out}"]},
                      {"sub_block": sub, "is_scalar_condition": True})
    scope = hr.Scope()
    w = rng.standard_normal((3, 2)).astype("float32")
    scope.set("w", hr.Tensor(w))
    scope.set("dead_w", hr.Tensor(np.zeros((3, 2), "float32")))
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x", "c"], ["o"], exe, prog, scope=scope)
    assert listed(tmp_path) == ["__model__", "w"]
    fresh = hr.Scope()
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, scope=fresh)
    assert [op.type for op in program.global_block().ops] == ["feed", "feed",
                                                              "conditional_block", "fetch"]
    assert [len(b.ops) for b in program.blocks] == [4, 1, 0]  # the pruned op's block: empty
    assert not program.global_block().has_var("dead_w") and not program.global_block().has_var("d")
    x = rng.standard_normal((4, 3)).astype("float32")
    (out,) = exe.run(program, feed={"x": x, "c": np.array([True])}, fetch_list=fetches,
                     scope=fresh)
    np.testing.assert_allclose(out, x @ w, rtol=1e-5)


# -- truncated files and failed saves ----------------------------------------------------------

def test_truncated_parameter_of_an_inference_model(tmp_path):
    prog, v = mlp()
    scope, _ = mlp_scope()
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], ["z"], exe, prog, params_filename="p",
                             scope=scope)
    data = (tmp_path / "p").read_bytes()
    for n in range(0, len(data), 7):
        (tmp_path / "p").write_bytes(data[:n])
        fresh = hr.Scope()
        with pytest.raises(ModelFileError) as e:
            hio.load_inference_model(str(tmp_path), exe, params_filename="p", scope=fresh)
        assert str(tmp_path / "p") in str(e.value)
        assert fresh.names() == []


def test_failed_inference_save_keeps_the_previous_model(tmp_path, monkeypatch):
    prog, v = mlp()
    scope, _ = mlp_scope()
    exe = hr.Executor()
    hio.save_inference_model(str(tmp_path), ["x"], ["z"], exe, prog, params_filename="p",
                             scope=scope)
    before = _files(tmp_path)
    scope.set("w", hr.Tensor(np.zeros((3, 2), "float32")))
    monkeypatch.setattr(persist_mod, "write_tensor", lambda *a: (_ for _ in ()).throw(
        KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        hio.save_inference_model(str(tmp_path), ["x"], ["h"], exe, prog, params_filename="p",
                                 scope=scope)
    assert _files(tmp_path) == before and no_temp_files(tmp_path)
