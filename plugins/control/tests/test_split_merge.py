"""split_lod_tensor / merge_lod_tensor: shape rules, the kernels against the NumPy reference
(rows, sequences with empty ones, a deeper LoD level, branches that receive nothing), a branch
without a value, and finite-difference gradients of "split_lod_tensor" and
"merge_lod_tensor" through the Executor."""
import numpy as np
import pytest

import headrace as hr
from headrace.errors import OpError, ShapeError
from headrace.runtime import Tensor
from headrace.runtime.kernel_info import kernel_info
from headrace.testing import build_op, check_op
from headrace_control.kernels.flow.split_merge import MergeLoDTensor
from headrace_control.reference.split_merge import merge_lod_tensor, split_lod_tensor

RNG = np.random.default_rng(7)


def _x(rows, lod, cols=3):
    return Tensor(RNG.standard_normal((rows, cols)), lod)


def _mask(*flags):
    return np.array(flags, dtype=bool).reshape(-1, 1)


# (X, mask, level): rows; sequences with an empty one; all to one branch (the other gets
# zero rows); the sequences of LoD level 1; an empty batch.
CASES = {
    "rows": (_x(4, []), _mask(1, 0, 0, 1), 0),
    "sequences": (_x(6, [[0, 2, 2, 5, 6]]), _mask(0, 1, 1, 0), 0),
    "all_true": (_x(5, [[0, 2, 5]]), _mask(1, 1), 0),
    "all_false": (_x(3, []), _mask(0, 0, 0), 0),
    "level_1": (_x(5, [[0, 2, 3], [0, 1, 1, 5]]), _mask(1, 0, 1), 1),
    "level_0_of_2": (_x(5, [[0, 2, 3], [0, 1, 1, 5]]), _mask(0, 1), 0),
    "empty_batch": (_x(0, []), _mask(), 0),
}


@pytest.mark.parametrize("case", CASES)
def test_split_matches_the_reference(case):
    x, mask, level = CASES[case]
    expected = split_lod_tensor({"X": x, "Mask": mask}, {"level": level})
    check_op("split_lod_tensor", {"X": x, "Mask": mask}, expected, attrs={"level": level})


@pytest.mark.parametrize("case", CASES)
def test_merge_puts_the_split_back(case):
    x, mask, level = CASES[case]
    parts = split_lod_tensor({"X": x, "Mask": mask}, {"level": level})
    inputs = {"X": x, "Mask": mask, "InTrue": parts["OutTrue"], "InFalse": parts["OutFalse"]}
    expected = merge_lod_tensor(inputs, {"level": level})
    np.testing.assert_array_equal(expected["Out"].data, x.data)
    assert expected["Out"].lod == x.lod
    check_op("merge_lod_tensor", inputs, expected, attrs={"level": level})


def test_split_keeps_the_lod_below_the_level():
    x, mask, _ = CASES["level_1"]
    expected = split_lod_tensor({"X": x, "Mask": mask}, {"level": 1})
    # Level-1 entries 0 and 2 ([1 row] and [4 rows]) go true, the empty one goes false.
    assert expected["OutTrue"].lod == [[0, 1, 5]] and expected["OutFalse"].lod == [[0, 0]]
    np.testing.assert_array_equal(expected["OutTrue"].data, x.data[[0, 1, 2, 3, 4]])


def _merge_kernel(tail=(2,)):
    prog = hr.Program()
    g = prog.global_block()
    g.create_var(name="m", shape=[-1, 1], dtype="bool")
    for n in ("t", "f"):
        g.create_var(name=n, shape=(-1,) + tail, dtype="float64")
    op = g.append_op("merge_lod_tensor", {"X": "m", "Mask": "m", "InTrue": "t",
                                          "InFalse": "f"}, {"Out": "o"})
    return MergeLoDTensor(op.attrs, kernel_info(op, place=hr.CPUPlace()))


@pytest.mark.parametrize("missing", ["InTrue", "InFalse"])
def test_a_branch_without_a_value_counts_as_zeros(missing):
    # An IfElse branch whose block did not run, or whose gradient nothing produced.
    m = _mask(1, 0, 1)
    here = Tensor(RNG.standard_normal((1 if missing == "InTrue" else 2, 2)))
    t, f = (None, here) if missing == "InTrue" else (here, None)
    (out,) = _merge_kernel()(Tensor(m), Tensor(m), t, f)
    ref = merge_lod_tensor({"X": m, "Mask": m, "InTrue": t and t.data,
                            "InFalse": f and f.data}, {"level": 0})
    np.testing.assert_array_equal(out.data, ref["Out"].data)
    rows = [0, 2] if missing == "InTrue" else [1]
    assert not out.data[rows].any() and out.data.shape == (3, 2)


def test_merge_with_no_branch_values_uses_the_declared_row_shape():
    m = _mask()
    (out,) = _merge_kernel()(Tensor(m), Tensor(m), None, None)
    assert out.data.shape == (0, 2)


def test_a_mask_of_the_wrong_length_is_reported():
    x, _, _ = CASES["sequences"]
    with pytest.raises(OpError, match=r"split_lod_tensor: Mask has 3 entries, X has 4 "
                                      r"sequences at LoD level 0"):
        check_op("split_lod_tensor", {"X": x, "Mask": _mask(1, 0, 1)}, {}, attrs={"level": 0})


def test_merge_refuses_a_branch_that_does_not_hold_its_entries():
    m = _mask(1, 0, 1)
    with pytest.raises(OpError, match="Mask selects 2 entries for InTrue, which holds 1 rows"):
        check_op("merge_lod_tensor", {"X": m, "Mask": m, "InTrue": np.ones((1, 2)),
                                      "InFalse": np.ones((1, 2))}, {})


def test_shape_rules():
    prog, op = build_op("split_lod_tensor", {"X": ([-1, 4], "float32", 2),
                                             "Mask": ([-1, 1], "bool")}, attrs={"level": 1})
    t = prog.global_block().var(op.output("OutTrue")[0])
    assert (t.shape, t.dtype, t.lod_level) == ((-1, 4), "float32", 1)
    with pytest.raises(ShapeError, match=r"must be a column of one bool per entry"):
        build_op("split_lod_tensor", {"X": ([-1, 4], "float32", 1), "Mask": ([-1, 2], "bool")})
    with pytest.raises(ShapeError, match=r"attribute level 1 needs input 'X'"):
        build_op("split_lod_tensor", {"X": ([-1, 4], "float32", 1),
                                      "Mask": ([-1, 1], "bool")}, attrs={"level": 1})
    prog, op = build_op("merge_lod_tensor", {
        "X": ([-1, 1], "bool"), "Mask": ([-1, 1], "bool"), "InTrue": ([-1, 4], "float32", 1),
        "InFalse": ([-1, 4], "float32", 1)})
    out = prog.global_block().var(op.output("Out")[0])
    assert (out.shape, out.dtype, out.lod_level) == ((-1, 4), "float32", 1)
    with pytest.raises(ShapeError, match=r"must agree beyond their first dim"):
        build_op("merge_lod_tensor", {"X": ([-1, 1], "bool"), "Mask": ([-1, 1], "bool"),
                                      "InTrue": ([-1, 4], "float32"),
                                      "InFalse": ([-1, 3], "float32")})


def _branches(mask, level, use_false=True):
    """h -> split -> (2 * true, -3 * false) -> merge: both ops' gradients in one program."""
    def build(g, h):
        g.create_var(name="m", shape=[-1, 1], dtype="bool")
        g.append_op("assign_value", {}, {"Out": "m"},
                    {"shape": list(mask.shape), "dtype": 0,
                     "bool_values": [bool(v) for v in mask.reshape(-1)]})
        g.append_op("split_lod_tensor", {"X": h, "Mask": "m"},
                    {"OutTrue": "t", "OutFalse": "f"}, {"level": level})
        g.append_op("scale", {"X": "t"}, {"Out": "t2"}, {"scale": 2.0})
        if not use_false:  # OutFalse reaches nothing: its gradient is zero-filled
            return g.var("t2")
        g.append_op("scale", {"X": "f"}, {"Out": "f2"}, {"scale": -3.0, "bias": 1.0})
        g.append_op("merge_lod_tensor", {"X": h, "Mask": "m", "InTrue": "t2", "InFalse": "f2"},
                    {"Out": "o"}, {"level": level})
        return g.var("o")
    return build


@pytest.mark.parametrize("case", [c for c in CASES if c != "empty_batch"])
def test_split_and_merge_gradients_match_finite_differences(case, lod_grads):
    x, mask, level = CASES[case]
    out = lod_grads(Tensor(x.data[:, :2].copy(), x.lod), _branches(mask, level))
    assert out.lod == x.lod


def test_split_gradient_with_an_unused_branch_matches_finite_differences(lod_grads):
    x, mask, level = CASES["sequences"]
    lod_grads(Tensor(x.data[:, :2].copy(), x.lod), _branches(mask, level, False))


def test_a_branch_without_lod_is_cut_like_x():
    # split's gradient merges branch gradients that may have lost their LoD on the way
    # through a gradient block: X (split's forward input) then says where entries end.
    x, mask, _ = CASES["sequences"]
    parts = split_lod_tensor({"X": x, "Mask": mask}, {"level": 0})
    inputs = {"X": x, "Mask": mask, "InTrue": parts["OutTrue"].data,
              "InFalse": parts["OutFalse"].data}
    expected = merge_lod_tensor(inputs, {"level": 0})
    np.testing.assert_array_equal(expected["Out"].data, x.data)
    assert expected["Out"].lod == x.lod
    check_op("merge_lod_tensor", inputs, expected, attrs={"level": 0})


def _if_else(mask, level=0):
    """IfElse as Fluid lowers it: split, one conditional_block per branch (run only when its
    branch received rows), merge with the condition as X."""
    def build(g, h):
        g.create_var(name="m", shape=[-1, 1], dtype="bool")
        g.append_op("assign_value", {}, {"Out": "m"},
                    {"shape": list(mask.shape), "dtype": 0,
                     "bool_values": [bool(v) for v in mask.reshape(-1)]})
        g.append_op("split_lod_tensor", {"X": h, "Mask": "m"},
                    {"OutTrue": "t", "OutFalse": "f"}, {"level": level})
        for side, part, scale in (("true", "t", 2.0), ("false", "f", -1.0)):
            out = g.create_var(name=f"out_{side}", shape=[-1, 2], dtype="float64",
                               lod_level=g.var(part).lod_level)
            with g.program.block_guard() as sub:
                sub.append_op("tanh", {"X": part}, {"Out": f"{side}_a"})
                sub.append_op("scale", {"X": f"{side}_a"}, {"Out": out}, {"scale": scale})
            scope = g.create_var(name=f"scope_{side}", type="step_scopes")
            g.append_op("conditional_block", {"Cond": [part], "Input": [part]},
                        {"Out": [out], "Scope": [scope]},
                        {"sub_block": sub, "is_scalar_condition": False})
        g.append_op("merge_lod_tensor", {"X": "m", "Mask": "m", "InTrue": "out_true",
                                         "InFalse": "out_false"}, {"Out": "o"},
                    {"level": level})
        return g.var("o")
    return build


@pytest.mark.parametrize("case", ["rows", "sequences", "all_true", "all_false"])
def test_if_else_lowering_gradients_match_finite_differences(case, lod_grads):
    # all_true / all_false: one branch receives no rows, its block does not run, and
    # neither its output nor its gradient ever gets a value.
    x, mask, level = CASES[case]
    x = Tensor(x.data[:, :2].copy(), x.lod)
    out = lod_grads(x, _if_else(mask, level))
    assert out.lod == x.lod
    # The forward values, with x itself as h: 2 tanh(x) where true, -tanh(x) where false.
    prog = hr.Program()
    g = prog.global_block()
    g.create_var(name="x", shape=[-1, 2], dtype="float64", lod_level=len(x.lod),
                 need_check_feed=True)
    o = _if_else(mask, level)(g, g.var("x"))
    (got,) = hr.Executor().run(prog, feed={"x": x}, fetch_list=[o], scope=hr.Scope(),
                               return_numpy=False)
    rows = np.repeat(mask.reshape(-1), np.diff(x.lod[0]) if x.lod else 1)[:, None]
    np.testing.assert_allclose(got.numpy(), np.where(rows, 2 * np.tanh(x.data),
                                                     -np.tanh(x.data)), rtol=1e-12)
    assert got.lod == x.lod
