"""Programs saved by PaddlePaddle 3.3.1 (legacy static mode) that expand, pad, smooth labels,
fill with shapes and values from tensors, and do integer arithmetic run here and give Paddle's
numbers: expand_v2 (constant shape, expand_shapes_tensor with Paddle 3's -2 placeholders, a
Shape tensor), expand_as_v2, pad, label_smooth, fill_constant (ShapeTensorList, ShapeTensor,
ValueTensor), elementwise ops and scale on int32/int64.

The fixtures are made by ``scripts/make_paddle_manip_fixtures.py`` (with Paddle); ``tox -e
paddle`` makes them afresh and runs this file on them (``HEADRACE_PADDLE_MANIP``).
"""
import os
import pathlib

import numpy as np
import pytest

import headrace as hr

ROOT = pathlib.Path(os.environ.get("HEADRACE_PADDLE_MANIP") or
                    pathlib.Path(__file__).resolve().parent / "data" / "paddle_manip")
FIXTURES = sorted(p.name for p in ROOT.iterdir() if (p / "model.pdmodel").exists())
# The ops each fixture is meant to exercise (checked in the loaded program).
EXERCISES = {
    "expand_static": {"expand_v2", "expand_as_v2"},
    "expand_tensors": {"expand_v2"},
    "pad_and_label_smooth": {"pad", "label_smooth"},
    "full_from_tensors": {"fill_constant"},
    "integer_math": {"elementwise_add", "elementwise_sub", "elementwise_mul",
                     "elementwise_div", "elementwise_max", "elementwise_min", "scale"},
}
# Input slots that must be bound in some op of the fixture (the run-time shapes and values).
SLOTS = {"expand_tensors": {("expand_v2", "Shape"), ("expand_v2", "expand_shapes_tensor")},
         "full_from_tensors": {("fill_constant", "ShapeTensor"),
                               ("fill_constant", "ShapeTensorList"),
                               ("fill_constant", "ValueTensor")},
         "pad_and_label_smooth": {("label_smooth", "PriorDist")},
         "expand_static": {("expand_as_v2", "Y")}}


def test_every_fixture_is_there():
    assert set(EXERCISES) <= set(FIXTURES)


@pytest.mark.parametrize("name", FIXTURES)
def test_paddle_program_gives_paddles_numbers(name):
    where = ROOT / name
    exe, scope = hr.Executor(), hr.Scope()
    program, feed_names, fetch_targets = hr.io.load_inference_model(
        str(where), exe, model_filename="model.pdmodel", params_filename=None, scope=scope)
    ops = program.global_block().ops
    assert EXERCISES.get(name, set()) <= {op.type for op in ops}
    bound = {(op.type, s) for op in ops for s in op.input_names if op.input(s)}
    assert SLOTS.get(name, set()) <= bound, f"{name}: {SLOTS[name] - bound} unbound"
    io = np.load(where / "io.npz")
    for run in sorted({key.split("/")[0] for key in io.files}):
        feed = {n: io[f"{run}/in:{n}"] for n in feed_names}
        got = exe.run(program, feed=feed, fetch_list=fetch_targets, scope=scope)
        for k, value in enumerate(got):
            want = io[f"{run}/out:{k}"]
            assert value.dtype == want.dtype and value.shape == want.shape, \
                f"{name} run {run} output {k}"
            # (copies and float32 coefficients as Paddle's: equal bit for bit)
            np.testing.assert_array_equal(value, want, err_msg=f"{name} run {run} output {k}")
