"""headrace.passes: every inference pass computes the same outputs as the program it rewrote
(on networks built here and on programs saved by Paddle), keeps the program serializable and
made of op types and attributes Paddle defines, and leaves alone what it cannot prove safe
(fetched intermediates, values written twice, training-mode batch_norm and dropout)."""
import os
import pathlib

import numpy as np
import pytest

import headrace as hr
from headrace.errors import HeadraceError
from headrace.framework.analysis import prune

DATA = pathlib.Path(__file__).resolve().parent / "data"
# What each pass may leave in a program: Paddle op types (fc, fused_conv2d_add_act and
# conv2d's Bias are Paddle's fused inference forms).
PADDLE_TYPES = {"feed", "fetch", "conv2d", "fc", "mul", "elementwise_add", "relu", "scale",
                "batch_norm", "dropout", "pool2d", "softmax", "assign", "tanh", "transpose2",
                "matmul_v2", "fused_conv2d_add_act"}
FUSED_CONV = "fused_conv2d_add_act"


def _types(program):
    return [op.type for op in program.global_block().ops]


def _run(program, scope, feed):
    exe = hr.Executor(hr.CPUPlace())
    return exe.run(program, feed=feed, scope=scope)


def _randomize_statistics(program, scope, rng):
    """Non-trivial batch_norm statistics and scales (a fresh startup gives 0/1, which would
    hide a wrong fold)."""
    for op in program.global_block().ops:
        if op.type == "batch_norm":
            for slot in ("Scale", "Bias", "Mean", "Variance"):
                name = op.input(slot)[0]
                a = np.asarray(scope.find(name).data)
                scope.set(name, hr.Tensor((rng.random(a.shape) + 0.5).astype(a.dtype)))


def _cnn(tmp_path, rng):
    """conv2d + bias + batch_norm + relu, dropout (downgrade_in_infer), fc + batch_norm, fc +
    relu, dropout (upscale_in_train), scale by 1: saved as an inference model."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        img = hr.layers.data("img", shape=[-1, 3, 8, 8], dtype="float32")
        h = hr.layers.conv2d(img, num_filters=4, filter_size=3, padding=1)
        h = hr.layers.batch_norm(h, act="relu")
        h = hr.layers.dropout(h, 0.3)
        h = hr.layers.fc(h, size=6)
        h = hr.layers.batch_norm(h)
        h = hr.layers.fc(h, size=5, act="relu")
        h = hr.layers.dropout(h, 0.2, dropout_implementation="upscale_in_train")
        out = hr.layers.scale(h, scale=1.0)
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    _randomize_statistics(main, scope, rng)
    hr.io.save_inference_model(str(tmp_path), ["img"], [out], exe, main, scope=scope)
    return str(tmp_path)


def _load(where, optimize, **kw):
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    program, feeds, targets = hr.io.load_inference_model(where, exe, scope=scope,
                                                         optimize=optimize, **kw)
    return program, feeds, targets, scope


def test_load_inference_model_optimizes_by_default(tmp_path):
    rng = np.random.default_rng(0)
    where = _cnn(tmp_path / "m", rng)
    plain, feeds, t1, s1 = _load(where, optimize=False)
    fast, feeds2, t2, s2 = _load(where, optimize=True)
    assert _types(plain) == ["feed", "conv2d", "elementwise_add", "batch_norm", "relu",
                             "dropout", "mul", "elementwise_add", "batch_norm", "mul",
                             "elementwise_add", "relu", "dropout", "scale", "fetch"]
    # conv + bias + bn + relu -> fused_conv2d_add_act(relu); downgrade dropout -> scale;
    # mul + add + bn + (the next) -> fc; mul + add + relu -> fc(relu); upscale dropout and
    # scale(1) removed.
    assert _types(fast) == ["feed", FUSED_CONV, "scale", "fc", "fc", "fetch"]
    assert fast.global_block().ops[1].attr("activation") == "relu"
    assert set(_types(fast)) <= PADDLE_TYPES and feeds == feeds2
    x = rng.standard_normal((3, 3, 8, 8)).astype("float32")
    (a,) = _run(plain, s1, {"img": x})
    (b,) = _run(fast, s2, {"img": x})
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    assert np.abs(a).max() > 0.1     # not a network of zeros
    # Serializable: the optimized program parses back and runs to the same numbers.
    again = hr.Program.parse_from_string(fast.serialize_to_string())
    (c,) = _run(again, s2, {"img": x})
    np.testing.assert_array_equal(c, b)
    # ... and saves as an inference model with only the parameters it uses.
    exe = hr.Executor(hr.CPUPlace())
    hr.io.save_inference_model(str(tmp_path / "opt"), feeds2, t2, exe, fast, scope=s2)
    saved, _, t3, s3 = _load(str(tmp_path / "opt"), optimize=False)
    (d,) = _run(saved, s3, {"img": x})
    np.testing.assert_array_equal(d, b)
    persist = {n for n, v in saved.global_block().vars.items()
               if v.persistable and n not in ("feed", "fetch")}
    assert persist == {n for op in saved.global_block().ops for n in op.input_arg_names
                       if n in persist}


def test_fc_and_conv2d_attrs_are_paddles(tmp_path):
    fast, _, _, _ = _load(_cnn(tmp_path, np.random.default_rng(1)), optimize=True)
    for op in fast.global_block().ops:
        if op.type == "fc":
            assert {"in_num_col_dims", "activation_type"} <= set(op.attr_names)
            assert set(op.inputs) == {"Input", "W", "Bias"}
        if op.type == FUSED_CONV:   # Paddle's conv2d_fusion (cuDNN), no oneDNN form
            assert {"Input", "Filter", "Bias"} <= set(op.inputs) <= \
                {"Input", "Filter", "Bias", "ResidualData"} and not op.attr("use_mkldnn")
            assert {"activation", "strides", "paddings", "dilations", "groups"} <= \
                set(op.attr_names)


def _block_program():
    """A program built op by op: x -> mul(w) -> + b -> relu -> y."""
    prog = hr.Program()
    blk = prog.global_block()
    blk.create_var(name="x", shape=[-1, 4], dtype="float32")
    blk.create_parameter("w", [4, 3])
    blk.create_parameter("b", [3])
    blk.append_op("mul", {"X": ["x"], "Y": ["w"]}, {"Out": ["m"]})
    blk.append_op("elementwise_add", {"X": ["m"], "Y": ["b"]}, {"Out": ["a"]})
    blk.append_op("relu", {"X": ["a"]}, {"Out": ["y"]})
    scope = hr.Scope()
    rng = np.random.default_rng(2)
    scope.set("w", hr.Tensor(rng.standard_normal((4, 3)).astype("float32")))
    scope.set("b", hr.Tensor(rng.standard_normal(3).astype("float32")))
    return prog, blk, scope


def _equal_after(prog, scope, names, fetch, feed):
    exe = hr.Executor(hr.CPUPlace())
    before = exe.run(prog.clone(), feed=feed, fetch_list=fetch, scope=scope)
    done = hr.passes.apply(prog, names, scope=scope, keep=fetch)
    after = exe.run(prog, feed=feed, fetch_list=fetch, scope=scope)
    for a, b in zip(before, after):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    return done


def test_fc_fuse_keeps_a_fetched_intermediate():
    x = {"x": np.random.default_rng(3).standard_normal((5, 4)).astype("float32")}
    prog, _, scope = _block_program()
    assert _equal_after(prog, scope, ["fc_fuse"], ["y"], x) == {"fc_fuse": 1}
    assert _types(prog) == ["fc"] and prog.global_block().ops[0].attr("activation_type") == \
        "relu"
    prog, _, scope = _block_program()   # 'a' is fetched: fc without relu, relu kept
    assert _equal_after(prog, scope, ["fc_fuse"], ["a", "y"], x) == {"fc_fuse": 1}
    assert _types(prog) == ["fc", "relu"]
    prog, _, scope = _block_program()   # 'm' is fetched: nothing fuses
    assert _equal_after(prog, scope, ["fc_fuse"], ["m", "y"], x) == {"fc_fuse": 0}
    prog, _, scope = _block_program()   # one pass may be named alone
    assert _equal_after(prog, scope, "fc_fuse", ["y"], x) == {"fc_fuse": 1}


def test_identity_clean_renames_fetch_targets_and_respects_rewrites():
    prog, blk, scope = _block_program()
    blk.append_op("assign", {"X": ["y"]}, {"Out": ["z"]})
    blk.append_op("scale", {"X": ["z"]}, {"Out": ["s"]}, {"scale": 1.0})
    blk.append_op("dropout", {"X": ["s"]}, {"Out": ["d"], "Mask": ["mask"]},
                  {"is_test": True, "dropout_prob": 0.25})
    blk.append_op("scale", {"X": ["d"]}, {"Out": ["t"]}, {"scale": 1.0, "bias": 0.5})
    x = {"x": np.random.default_rng(4).standard_normal((5, 4)).astype("float32")}
    done = _equal_after(prog, scope, ["identity_op_clean"], ["t"], x)
    assert done == {"identity_op_clean": 3}
    assert _types(prog) == ["mul", "elementwise_add", "relu", "scale", "scale"]
    assert prog.global_block().ops[3].attr("scale") == pytest.approx(0.75)
    # A fetched output is renamed in the fetch op of an inference program.
    prog, blk, scope = _block_program()
    blk.append_op("assign", {"X": ["y"]}, {"Out": ["z"]})
    inf = hr.io.inference_program(prog, ["x"], ["z"])
    hr.passes.apply(inf, ["identity_op_clean"], scope=scope)
    assert _types(inf) == ["feed", "mul", "elementwise_add", "relu", "fetch"]
    assert [op.input("X") for op in inf.global_block().ops if op.type == "fetch"] == [["y"]]
    # An input written again after the copy keeps the copy.
    prog, blk, scope = _block_program()
    blk.append_op("assign", {"X": ["y"]}, {"Out": ["z"]})
    blk.append_op("relu", {"X": ["a"]}, {"Out": ["y"]})
    blk.append_op("scale", {"X": ["z"]}, {"Out": ["t"]}, {"scale": 3.0})
    assert _equal_after(prog, scope, ["identity_op_clean"], ["t"], x) == \
        {"identity_op_clean": 0}


def test_training_dropout_and_batch_norm_stay():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 2, 4, 4], dtype="float32")
        h = hr.layers.batch_norm(hr.layers.conv2d(x, 3, 3, bias_attr=False))
        hr.layers.dropout(h, 0.5)
    scope = hr.Scope()
    hr.Executor(hr.CPUPlace()).run(startup, scope=scope)
    before = _types(main)
    assert not any(hr.passes.apply(main, scope=scope).values())
    assert _types(main) == before


def test_constant_folding_runs_parameter_only_ops_once():
    prog, blk, scope = _block_program()
    # w2 = transpose(scale(v)) depends on parameters only; x @ w2 does not.
    blk.create_parameter("v", [3, 4])
    scope.set("v", hr.Tensor(np.arange(12, dtype="float32").reshape(3, 4)))
    blk.append_op("scale", {"X": ["v"]}, {"Out": ["v2"]}, {"scale": 0.5})
    blk.append_op("transpose2", {"X": ["v2"]}, {"Out": ["w2"], "XShape": ["w2s"]},
                  {"axis": [1, 0]})
    blk.append_op("mul", {"X": ["x"], "Y": ["w2"]}, {"Out": ["q"]})
    x = {"x": np.random.default_rng(5).standard_normal((2, 4)).astype("float32")}
    done = _equal_after(prog, scope, ["constant_folding"], ["y", "q"], x)
    assert done == {"constant_folding": 2}
    assert _types(prog) == ["mul", "elementwise_add", "relu", "mul"]
    w2 = prog.global_block().var("w2")
    assert w2.persistable
    np.testing.assert_array_equal(np.asarray(scope.find("w2").data),
                                  np.arange(12, dtype="float32").reshape(3, 4).T * 0.5)


def test_matmul_to_mul_only_without_transposes():
    prog = hr.Program()
    blk = prog.global_block()
    blk.create_var(name="x", shape=[-1, 2, 4], dtype="float32")
    blk.create_parameter("w", [4, 3])
    blk.create_parameter("v", [3, 4])
    blk.append_op("matmul_v2", {"X": ["x"], "Y": ["w"]}, {"Out": ["a"]})
    blk.append_op("matmul_v2", {"X": ["x"], "Y": ["v"]}, {"Out": ["b"]}, {"trans_y": True})
    blk.append_op("matmul", {"X": ["x"], "Y": ["w"]}, {"Out": ["c"]}, {"alpha": 2.0})
    scope, rng = hr.Scope(), np.random.default_rng(10)
    scope.set("w", hr.Tensor(rng.standard_normal((4, 3)).astype("float32")))
    scope.set("v", hr.Tensor(rng.standard_normal((3, 4)).astype("float32")))
    x = {"x": rng.standard_normal((5, 2, 4)).astype("float32")}
    assert _equal_after(prog, scope, ["map_matmul_to_mul"], ["a", "b", "c"], x) == \
        {"map_matmul_to_mul": 1}
    assert _types(prog) == ["mul", "matmul_v2", "matmul"]
    assert prog.global_block().ops[0].attr("x_num_col_dims") == 2


def test_unknown_pass_is_named():
    with pytest.raises(HeadraceError, match="unknown inference pass.*'nope'.*fc_fuse"):
        hr.passes.apply(hr.Program(), ["nope"])


# -- programs saved by Paddle -----------------------------------------------------------------

def _paddle_train_inference(name, target_of):
    """The inference program of a Paddle-saved training program (tests/data/paddle_train),
    with Paddle's initial parameters and non-trivial batch_norm statistics."""
    where = DATA / "paddle_train" / name
    main = hr.Program.parse_from_string((where / "main.pb").read_bytes())
    startup = hr.Program.parse_from_string((where / "startup.pb").read_bytes())
    data = np.load(where / "data.npz")
    scope = hr.Scope()
    hr.Executor(hr.CPUPlace()).run(startup, scope=scope)
    for k in data.files:
        if k.startswith("init:"):
            scope.set(k.split(":", 1)[1], hr.Tensor(data[k].copy()))
    _randomize_statistics(main, scope, np.random.default_rng(6))
    feed = {k.split(":", 1)[1]: data[k] for k in data.files if k.startswith("feed0:")}
    op = next(op for op in main.global_block().ops if op.type == target_of[0])
    target = op.input(target_of[1])[0]
    feed = {n: v for n, v in feed.items()
            if n in {m for o in prune(main.global_block(), [target]) for m in o.input_arg_names}}
    return hr.io.inference_program(main, list(feed), [target]), scope, feed


@pytest.mark.parametrize("name, target_of, fused", [
    ("conv_momentum", ("softmax_with_cross_entropy", "Logits"),
     {"conv_bn_fuse", "fc_fuse", "conv_elementwise_add_act_fuse"}),
    ("mse_sgd", ("elementwise_sub", "X"), {"fc_fuse"}),
    # Paddle 2.x's Linear: matmul_v2 + elementwise_add -> mul + add -> fc.
    ("ce_adam", ("softmax_with_cross_entropy", "Logits"), {"map_matmul_to_mul", "fc_fuse"}),
])
def test_paddle_saved_training_programs(name, target_of, fused):
    program, scope, feed = _paddle_train_inference(name, target_of)
    before = _run(program.clone(), scope, feed)
    done = hr.passes.apply(program, scope=scope)
    assert {k for k, v in done.items() if v} >= fused, done
    after = _run(hr.Program.parse_from_string(program.serialize_to_string()), scope, feed)
    for a, b in zip(before, after):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    assert set(_types(program)) <= PADDLE_TYPES


@pytest.mark.parametrize("name", sorted(p.name for p in (DATA / "paddle_control_flow").iterdir()
                                        if (p / "model.pdmodel").exists()))
def test_paddle_saved_inference_models(name):
    """Paddle's inference models (control flow: folding stays out of loop-carried values)
    give the same numbers optimized and not, and Paddle's recorded outputs."""
    where = str(DATA / "paddle_control_flow" / name)
    params = "model.pdiparams" if os.path.exists(os.path.join(where, "model.pdiparams")) \
        else None
    io = np.load(os.path.join(where, "io.npz"))
    loaded = [_load(where, opt, model_filename="model.pdmodel", params_filename=params)
              for opt in (False, True)]
    for run in sorted({k.split("/")[0] for k in io.files}):
        results = []
        for program, feeds, targets, scope in loaded:
            feed = {n: io[f"{run}/in:{n}"] for n in feeds}
            results.append(hr.Executor(hr.CPUPlace()).run(program, feed=feed,
                                                          fetch_list=targets, scope=scope))
        for k, (a, b) in enumerate(zip(*results)):
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
            np.testing.assert_allclose(np.asarray(b), io[f"{run}/out:{k}"], rtol=1e-5,
                                       atol=1e-6)


def test_residual_block_folds_to_convs(tmp_path):
    """conv+bn+relu, conv+bn, + shortcut (a 1x1 conv+bn), relu: batch_norms folded, the
    residual add taken into the second conv (ResidualData), equal outputs."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 3, 6, 6], dtype="float32")
        h = hr.layers.batch_norm(hr.layers.conv2d(x, 4, 3, padding=1, bias_attr=False),
                                 act="relu")
        h = hr.layers.batch_norm(hr.layers.conv2d(h, 4, 3, padding=1, bias_attr=False))
        short = hr.layers.batch_norm(hr.layers.conv2d(x, 4, 1, bias_attr=False))
        out = hr.layers.relu(hr.layers.elementwise_add(h, short))
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(8)
    _randomize_statistics(main, scope, rng)
    hr.io.save_inference_model(str(tmp_path), ["x"], [out], exe, main, scope=scope)
    plain, _, _, s1 = _load(str(tmp_path), optimize=False)
    fast, _, _, s2 = _load(str(tmp_path), optimize=True)
    # Without the activation pass: Paddle's oneDNN conv2d with ResidualData.
    names = [n for n in hr.passes.INFERENCE_PASSES if n != "conv_elementwise_add_act_fuse"]
    onednn = plain.clone()
    hr.passes.apply(onednn, names, scope=s1)
    assert _types(onednn) == ["feed", "conv2d", "relu", "conv2d", "conv2d", "relu", "fetch"]
    res = onednn.global_block().ops[4]
    assert res.input("ResidualData") == onednn.global_block().ops[3].output("Output")
    assert res.attr("fuse_residual_connection") and res.attr("use_mkldnn")
    assert _types(fast) == ["feed"] + [FUSED_CONV] * 3 + ["fetch"]
    first, short, fused = fast.global_block().ops[1:4]
    assert fused.input("ResidualData") == short.output("Output")
    assert [op.attr("activation") for op in (first, short, fused)] == \
        ["relu", "identity", "relu"]
    xs = rng.standard_normal((2, 3, 6, 6)).astype("float32")
    (a,) = _run(plain, s1, {"x": xs})
    (b,) = _run(fast, s2, {"x": xs})
    (c,) = _run(onednn, s1, {"x": xs})
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(c, b)
    # The shortcut written after the conv cannot be its ResidualData: nothing fuses then.
    prog = hr.Program()
    blk = prog.global_block()
    blk.create_var(name="x", shape=[-1, 1, 4, 4], dtype="float32")
    blk.create_parameter("f", [1, 1, 1, 1])
    blk.append_op("conv2d", {"Input": ["x"], "Filter": ["f"]}, {"Output": ["c"]})
    blk.append_op("relu", {"X": ["x"]}, {"Out": ["r"]})
    blk.append_op("elementwise_add", {"X": ["c"], "Y": ["r"]}, {"Out": ["y"]})
    scope = hr.Scope()
    scope.set("f", hr.Tensor(np.full((1, 1, 1, 1), 2.0, "float32")))
    assert hr.passes.apply(prog, ["conv_residual_fuse"], scope=scope) == \
        {"conv_residual_fuse": 0}


def test_steady_state_inference_allocates_no_arrays(tmp_path):
    """After the passes, an fc network's steady-state run allocates no array: each kernel
    writes into its own last output again once the run has dropped it (recycled), so the
    traced peak above the start stays below the size of one hidden activation."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 64], dtype="float32")
        h = hr.layers.fc(x, size=256, act="relu")
        h = hr.layers.dropout(h, 0.1, dropout_implementation="upscale_in_train")
        h = hr.layers.fc(h, size=256, act="relu")
        out = hr.layers.fc(h, size=10)
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    hr.io.save_inference_model(str(tmp_path), ["x"], [out], exe, main, scope=scope)
    prog, _, targets, s = _load(str(tmp_path), optimize=True)
    assert _types(prog) == ["feed", "fc", "fc", "fc", "fetch"]
    feed = {"x": np.random.default_rng(9).standard_normal((32, 64)).astype("float32")}
    hidden = 32 * 256 * 4
    grown = _traced_peak(exe, prog, feed, targets, s)
    assert grown < hidden // 4, grown


def _traced_peak(exe, prog, feed, targets, scope, runs=5):
    """The traced peak above the start over ``runs`` steady runs (after three warm ones)."""
    import tracemalloc
    for _ in range(3):
        exe.run(prog, feed=feed, fetch_list=targets, scope=scope)
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in range(runs):
            exe.run(prog, feed=feed, fetch_list=targets, scope=scope)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - start


def test_steady_state_conv_inference_allocates_no_activations(tmp_path):
    """A conv net after the passes (fused convs with bias, batch_norm, residual and relu, max
    pool, fc). An Executor's runs allocate from the host pool (runtime.host_memory), and
    drop each value after its last reader (runtime.liveness): a steady run takes no new
    block from malloc, and the ops share the blocks of the live set (its peak: three
    activations, not one per op). Without the pool each kernel writes its last output again
    (recycled), so the traced peak stays below a quarter of one activation; the unoptimized
    program allocates each op's output anew (seen by the same measure: several
    activations)."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 3, 32, 32], dtype="float32")
        h = hr.layers.conv2d(x, 16, 3, padding=1, act="relu")
        h = hr.layers.batch_norm(hr.layers.conv2d(h, 16, 3, padding=1, bias_attr=False),
                                 act="relu")
        short = hr.layers.batch_norm(hr.layers.conv2d(h, 16, 1, bias_attr=False))
        h = hr.layers.batch_norm(hr.layers.conv2d(h, 16, 3, padding=1, bias_attr=False))
        h = hr.layers.pool2d(hr.layers.relu(hr.layers.elementwise_add(h, short)), 2, "max", 2)
        out = hr.layers.fc(h, size=10)
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    _randomize_statistics(main, scope, np.random.default_rng(10))
    hr.io.save_inference_model(str(tmp_path), ["x"], [out], exe, main, scope=scope)
    feed = {"x": np.random.default_rng(11).standard_normal((8, 3, 32, 32)).astype("float32")}
    activation = 8 * 16 * 32 * 32 * 4
    fast, _, targets, s = _load(str(tmp_path), optimize=True)
    assert _types(fast) == ["feed"] + [FUSED_CONV] * 4 + ["pool2d", "fc", "fetch"]
    want = exe.run(fast, feed=feed, fetch_list=targets, scope=s)[0]
    for _ in range(3):
        exe.run(fast, feed=feed, fetch_list=targets, scope=s)
    before = hr.host_memory.memory_stats()
    hr.host_memory.reset_peak_memory_stats()
    for _ in range(5):
        got = exe.run(fast, feed=feed, fetch_list=targets, scope=s)[0]
    after = hr.host_memory.memory_stats()
    assert np.array_equal(got, want)
    assert after["allocations"] - before["allocations"] >= 5 * 5   # the runs' arrays: pooled
    assert after["fresh_allocations"] == before["fresh_allocations"]
    assert after["reserved_bytes"] == before["reserved_bytes"]
    assert after["peak_allocated_bytes"] - before["allocated_bytes"] <= 3 * activation
    unpooled = hr.Executor(hr.CPUPlace())
    unpooled._pool = None
    # (NumPy's ufunc buffer for conv2d's bias add over ResidualData, 32 KB at most, remains.)
    assert _traced_peak(unpooled, fast, feed, targets, s) < activation // 4
    assert np.array_equal(unpooled.run(fast, feed=feed, fetch_list=targets, scope=s)[0], want)
    plain, _, targets, s = _load(str(tmp_path), optimize=False)
    assert _traced_peak(unpooled, plain, feed, targets, s) > 2 * activation
