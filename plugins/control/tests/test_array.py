"""write_to_array / read_from_array: array kinds, element descriptions, the index slot."""
import numpy as np
import pytest

import headrace
from headrace.errors import OpError, OpValidationError, ShapeError
from headrace.testing import build_op

ARRAY = {"type": "lod_tensor_array", "shape": [-1, 4], "dtype": "float16", "lod_level": 2}


def var(prog, name):
    return prog.global_block().var(name)


@pytest.mark.parametrize("x", [([-1, 4], "float32", 1), ([3], "int64", 0), ([], "bool", 0)])
def test_write_to_array(x):
    prog, _ = build_op("write_to_array", {"X": x, "I": ([1], "int64")})
    out = var(prog, "out_out_0")
    assert (out.kind, out.shape, out.dtype, out.lod_level) == \
        ("lod_tensor_array", tuple(x[0]), x[1], x[2])


def test_read_from_array():
    prog, _ = build_op("read_from_array", {"X": ARRAY, "I": ([1], "int64")})
    out = var(prog, "out_out_0")
    assert (out.kind, out.shape, out.dtype, out.lod_level) == \
        ("lod_tensor", (-1, 4), "float16", 2)


def test_round_trip_through_an_array():
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="x", shape=[-1, 8], dtype="float32", lod_level=1)
    block.create_var(name="i", shape=[1], dtype="int64")
    block.create_var(name="arr", type="lod_tensor_array", dtype="float32")
    with prog.block_guard() as body:  # writes from a loop body land in the enclosing array
        body.append_op("write_to_array", {"X": "x", "I": "i"}, {"Out": "arr"})
    block.append_op("read_from_array", {"X": "arr", "I": "i"}, {"Out": "y"})
    arr, y = block.var("arr"), block.var("y")
    assert (arr.shape, arr.lod_level) == ((-1, 8), 1) and not body.has_var("arr")
    assert (y.kind, y.shape, y.dtype, y.lod_level) == ("lod_tensor", (-1, 8), "float32", 1)


def test_write_into_a_tensor_variable():
    prog, _ = build_op("write_to_array", {"X": ([2], "float32"), "I": ([1], "int64")})
    block = prog.global_block()
    block.create_var(name="t", shape=[2], dtype="float32")
    with pytest.raises(OpError, match=r"output 'Out' \(t\) is a lod_tensor variable(.|\n)*"
                                      r"expected: lod_tensor_array"):
        block.append_op("write_to_array", {"X": "x_0", "I": "i_0"}, {"Out": "t"})


def test_write_of_an_array():
    with pytest.raises(ShapeError, match=r"input 'X' \(x_0\) is a lod_tensor_array variable"):
        build_op("write_to_array", {"X": ARRAY, "I": ([1], "int64")})


def test_read_from_a_tensor():
    with pytest.raises(ShapeError, match=r"input 'X' \(x_0\) is a lod_tensor variable(.|\n)*"
                                         r"expected: lod_tensor_array"):
        build_op("read_from_array", {"X": ([2, 4], "float32"), "I": ([1], "int64")})


def _x(op_type):
    return ARRAY if op_type == "read_from_array" else ([2], "float32")


@pytest.mark.parametrize("op_type", ["write_to_array", "read_from_array"])
@pytest.mark.parametrize("shape", [[1], [], [-1]])
def test_index_of_one_element(op_type, shape):
    build_op(op_type, {"X": _x(op_type), "I": (shape, "int64")})


@pytest.mark.parametrize("op_type", ["write_to_array", "read_from_array"])
def test_index_of_several_elements(op_type):
    with pytest.raises(ShapeError, match=r"input 'I' \(i_0\) must hold exactly one element"):
        build_op(op_type, {"X": _x(op_type), "I": ([2], "int64")})


@pytest.mark.parametrize("op_type", ["write_to_array", "read_from_array"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_index_must_be_int64(op_type, dtype):
    with pytest.raises(OpValidationError, match=r"input 'I' \(i_0\) has an unsupported dtype"
                                                r"(.|\n)*expected: int64"):
        build_op(op_type, {"X": _x(op_type), "I": ([1], dtype)})


@pytest.mark.parametrize("op_type", ["write_to_array", "read_from_array"])
def test_index_must_be_a_tensor(op_type):
    index = {"type": "lod_tensor_array", "shape": [1], "dtype": "int64"}
    with pytest.raises(ShapeError, match=r"input 'I' \(i_0\) is a lod_tensor_array variable"):
        build_op(op_type, {"X": _x(op_type), "I": index})


def test_lod_array_length():
    prog, op = build_op("lod_array_length", {"X": ARRAY})
    out = var(prog, "out_out_0")
    assert (out.kind, out.shape, out.dtype, out.lod_level) == ("lod_tensor", (1,), "int64", 0)
    assert not op.opdef.differentiable


def test_lod_array_length_of_a_tensor():
    with pytest.raises(ShapeError, match=r"input 'X' \(x_0\) is a lod_tensor variable(.|\n)*"
                                         r"expected: lod_tensor_array"):
        build_op("lod_array_length", {"X": ([2, 4], "float32")})


@pytest.mark.parametrize("positions, length", [([0], 1), ([2], 3), ([1, 0, 4], 5)])
def test_lod_array_length_runs(positions, length):
    # Writing past the end grows the array: the length is one past the highest position.
    # (An array nothing wrote has length 0: tests/test_layers_control_flow.py, a zero-step loop.)
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="x", shape=[2], dtype="float32", need_check_feed=True)
    block.create_var(name="arr", type="lod_tensor_array", dtype="float32")
    for k, p in enumerate(positions):
        block.append_op("fill_constant", {}, {"Out": f"i{k}"},
                        {"shape": [1], "dtype": 3, "value": float(p)})
        block.append_op("write_to_array", {"X": "x", "I": f"i{k}"}, {"Out": "arr"})
    block.append_op("lod_array_length", {"X": "arr"}, {"Out": "n"})
    (n,) = headrace.Executor().run(prog, feed={"x": np.ones(2, np.float32)}, fetch_list=["n"],
                                   scope=headrace.Scope())
    assert n.dtype == np.int64 and n.tolist() == [length]
