"""Programs saved by PaddlePaddle 3.3.1 (legacy static mode) that use control flow run here and
give Paddle's numbers: cond (conditional_block, select_input), while_loop with int64 counters
(scale, elementwise_add, increment on int64), tensor arrays, switch_case, select_output.

The fixtures are made by ``scripts/make_paddle_control_flow_fixtures.py`` (with Paddle);
``tox -e paddle`` makes them afresh and runs this file on them (``HEADRACE_PADDLE_FIXTURES``).
"""
import os
import pathlib

import numpy as np
import pytest

import headrace as hr

ROOT = pathlib.Path(os.environ.get("HEADRACE_PADDLE_FIXTURES") or
                    pathlib.Path(__file__).resolve().parent / "data" / "paddle_control_flow")
FIXTURES = sorted(p.name for p in ROOT.iterdir() if (p / "model.pdmodel").exists())
# What each fixture is meant to exercise (checked in the loaded program).
EXERCISES = {
    "cond": {"conditional_block", "select_input", "logical_not"},
    "while_counter": {"while", "increment", "scale", "elementwise_add", "logical_and"},
    "array": {"while", "write_to_array", "read_from_array", "lod_array_length"},
    "switch_case": {"conditional_block", "select_input", "equal"},
    "select_output": {"select_output", "select_input"},
    "case": {"conditional_block", "select_input", "less_than", "greater_than"},
    "fc_cond_in_while": {"while", "conditional_block", "select_input", "mul", "increment"},
    "nested_while": {"while", "write_to_array", "lod_array_length", "scale", "increment"},
    "array_read_loop": {"while", "read_from_array", "write_to_array", "lod_array_length"},
    "cond_struct": {"conditional_block", "select_input"},
}
# Ops that must act on an int64 X (the loop counters' arithmetic).
INT64_OPS = {"while_counter": {"scale", "elementwise_add", "increment"},
             "nested_while": {"scale", "elementwise_add", "increment"},
             "array_read_loop": {"elementwise_add", "increment"}}
# (outer, inner): an `outer` op whose sub-block holds an `inner` op.
NESTED = {"fc_cond_in_while": ("while", "conditional_block"), "nested_while": ("while", "while")}


def _int64_op_types(program):
    return {op.type for b in program.blocks for op in b.ops if "X" in op.input_names
            and op.input("X") and str(b.var_recursive(op.input("X")[0]).dtype) == "int64"}


def _nests(program, outer, inner):
    return any(op.type == outer and any(o.type == inner for o in op.attr("sub_block").ops)
               for b in program.blocks for op in b.ops)


def test_every_construct_has_a_fixture():
    kinds = {name.rsplit("_", 1)[0] if name[-1].isdigit() or name.endswith(("pos", "neg"))
             else name for name in FIXTURES}
    assert set(EXERCISES) <= kinds


@pytest.mark.parametrize("name", FIXTURES)
def test_paddle_program_gives_paddles_numbers(name):
    where = ROOT / name
    exe, scope = hr.Executor(), hr.Scope()
    params = "model.pdiparams" if (where / "model.pdiparams").exists() else None
    program, feed_names, fetch_targets = hr.io.load_inference_model(
        str(where), exe, model_filename="model.pdmodel", params_filename=params, scope=scope)
    types = {op.type for b in program.blocks for op in b.ops}
    kind = max((k for k in EXERCISES if name.startswith(k)), key=len)
    assert EXERCISES[kind] <= types, f"{name}: missing {EXERCISES[kind] - types}"
    if kind in INT64_OPS:
        assert INT64_OPS[kind] <= _int64_op_types(program), name
    if kind in NESTED:
        assert _nests(program, *NESTED[kind]), f"{name}: no {NESTED[kind][1]} inside a " \
                                               f"{NESTED[kind][0]}"
    if params:  # the loop body's parameters, saved by Paddle, are in the scope
        saved = {v.name for v in program.global_block().vars.values()
                 if v.persistable and v.name not in ("feed", "fetch")}
        assert saved and all(n in scope for n in saved), f"{name}: {saved}"
    io = np.load(where / "io.npz")
    runs = sorted({key.split("/")[0] for key in io.files})
    for run in runs:
        feed = {n: io[f"{run}/in:{n}"] for n in feed_names}
        got = exe.run(program, feed=feed, fetch_list=fetch_targets, scope=scope)
        for k, value in enumerate(got):
            want = io[f"{run}/out:{k}"]
            assert value.dtype == want.dtype, f"{name} run {run} output {k}"
            # Shapes too: Paddle 3's whole-tensor reductions are 0-D here as well.
            assert value.shape == want.shape, f"{name} run {run} output {k}"
            if want.dtype.kind in "iub":
                np.testing.assert_array_equal(value, want, err_msg=f"{name} run {run} out {k}")
            else:
                np.testing.assert_allclose(value, want, rtol=1e-6, atol=1e-7,
                                           err_msg=f"{name} run {run} output {k}")
