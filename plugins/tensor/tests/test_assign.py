"""assign: a copy keeps kind, shape, dtype and LoD level."""
import pytest

from headrace.errors import OpError, OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


@pytest.mark.parametrize("spec", [
    ([2, 3], "float32"),
    ([-1, 7], "int64", 2),
    ([], "bool"),
    {"shape": [-1, 5], "dtype": "float32", "lod_level": 1, "type": "lod_tensor_array"},
    {"shape": [10, 4], "dtype": "float32", "type": "selected_rows"},
])
def test_assign_copies_the_description(spec):
    prog, op = build_op("assign", {"X": spec})
    x, out = (prog.global_block().var(n) for n in ("x_0", "out_out_0"))
    assert (out.kind, out.shape, out.dtype, out.lod_level) == \
        (x.kind, x.shape, x.dtype, x.lod_level)


def test_assign_into_a_declared_variable_updates_it():
    prog, _ = build_op("assign", {"X": ([3, 4], "int32")})
    block = prog.global_block()
    y = block.create_var(name="y", shape=[-1, -1], dtype="int32")
    block.append_op("assign", {"X": "x_0"}, {"Out": "y"})
    assert (y.shape, y.dtype) == ((3, 4), "int32")


def test_assign_into_a_variable_of_another_kind():
    prog, _ = build_op("assign", {"X": ([2], "float32")})
    block = prog.global_block()
    block.create_var(name="arr", type="lod_tensor_array", dtype="float32")
    with pytest.raises(OpError, match=r"output 'Out' \(arr\) is a lod_tensor_array variable"):
        block.append_op("assign", {"X": "x_0"}, {"Out": "arr"})


@pytest.mark.parametrize("kind", ["step_scopes", "feed_minibatch", "fetch_list"])
def test_assign_of_a_non_tensor(kind):
    with pytest.raises(ShapeError, match=rf"input 'X' \(x_0\) is a {kind} variable"):
        infer_shapes("assign", {"X": {"type": kind}})


def test_assign_takes_one_input():
    with pytest.raises(OpValidationError, match=r"input slot 'X' takes one variable"):
        infer_shapes("assign", {"X": [([1], "float32"), ([1], "float32")]})
