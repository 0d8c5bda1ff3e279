"""while: the Condition rules, StepScopes, and its sub-block attribute."""
import pytest

import headrace
from headrace.errors import OpError, OpValidationError, ShapeError
from headrace.ops import default_registry


def program(cond_shape=(1,), cond_dtype="bool", cond_kind="lod_tensor"):
    """A counting loop: the body increments i and stores x at position i of an array."""
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="cond", shape=cond_shape, dtype=cond_dtype, type=cond_kind)
    block.create_var(name="i", shape=[1], dtype="int64")
    block.create_var(name="x", shape=[-1, 3], dtype="float32")
    with prog.block_guard() as body:
        body.append_op("increment", {"X": "i"}, {"Out": "i"})
        body.append_op("write_to_array", {"X": "x", "I": "i"}, {"Out": "arr"})
    return prog, block, body


def append(block, body, **attrs):
    return block.append_op("while", {"X": ["i", "x"], "Condition": ["cond"]},
                           {"Out": ["i", "arr"], "StepScopes": ["steps"]},
                           {"sub_block": body, **attrs})


def test_runs_through_a_frame_kernel():
    # Control flow runs through kernels that drive sub-plans, on every device.
    opdef = default_registry().get("while")
    assert not opdef.no_kernel and {"cpu", "cuda"} <= set(default_registry().kernels_for("while"))
    assert opdef.attrs["is_test"].default is False
    assert default_registry().kernel("while", "cpu").kind == "frame"


def test_owns_its_body():
    prog, block, body = program()
    op = append(block, body)
    assert op.sub_blocks() == [body] and body.parent_idx == 0
    assert block.var("steps").kind == "step_scopes"
    # the body's array is created where write_to_array ran
    assert body.var("arr").kind == "lod_tensor_array"


def test_serialize_keeps_the_block_attribute():
    prog, block, body = program()
    append(block, body, is_test=True)
    again = headrace.Program.parse_from_string(prog.serialize_to_string())
    op = again.global_block().ops[0]
    assert op.type == "while" and op.attr_type("sub_block") == "block"
    assert op.attr("sub_block").idx == 1 and op.attr("is_test") is True
    assert [o.type for o in op.sub_blocks()[0].ops] == ["increment", "write_to_array"]
    assert again.global_block().var("steps").kind == "step_scopes"


@pytest.mark.parametrize("shape", [(1,), (), (-1,), (1, 1)])
def test_condition_of_one_element(shape):
    prog, block, body = program(cond_shape=shape)
    append(block, body)


@pytest.mark.parametrize("shape", [(2,), (1, 4)])
def test_condition_of_several_elements(shape):
    prog, block, body = program(cond_shape=shape)
    with pytest.raises(ShapeError, match=r"input 'Condition' \(cond\) must hold exactly one "
                                         r"element"):
        append(block, body)


def test_condition_must_be_bool():
    prog, block, body = program(cond_dtype="float32")
    with pytest.raises(OpValidationError, match=r"'Condition' \(cond\) has an unsupported "
                                                r"dtype(.|\n)*found:    float32"):
        append(block, body)


def test_condition_must_be_a_tensor():
    prog, block, body = program(cond_kind="lod_tensor_array")
    with pytest.raises(ShapeError, match=r"'Condition' \(cond\) is a lod_tensor_array variable"):
        append(block, body)


def test_step_scopes_must_be_a_step_scopes_variable():
    prog, block, body = program()
    block.create_var(name="steps", type="lod_tensor_array")
    with pytest.raises(OpError, match=r"'StepScopes' \(steps\) is a lod_tensor_array variable"):
        append(block, body)


def test_x_and_out_are_optional():
    prog, block, body = program()
    op = block.append_op("while", {"Condition": "cond"}, {"StepScopes": "steps"},
                         {"sub_block": body})
    assert op.input("X") == [] and op.output("Out") == []


@pytest.mark.parametrize("attrs, match", [
    ({}, r"missing required attribute 'sub_block'"),
    ({"sub_block": 0}, r"'sub_block' must be a sub-block"),
    ({"sub_block": -1}, r"'sub_block' has a bad value"),
    ({"sub_block": 5}, r"'sub_block' points at block 5, which is not a block of this program"),
    ({"sub_block": 1, "is_test": "no"}, r"'is_test' is not of type bool"),
])
def test_attribute_errors(attrs, match):
    prog, block, body = program()
    with pytest.raises(OpValidationError, match=match):
        block.append_op("while", {"Condition": "cond"}, {"StepScopes": "steps"}, attrs)


def test_nested_loops():
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="cond", shape=[1], dtype="bool")
    block.create_var(name="i", shape=[1], dtype="int64")
    with prog.block_guard() as outer:
        with prog.block_guard() as inner:
            inner.append_op("increment", {"X": "i"}, {"Out": "i"})
        outer.append_op("while", {"Condition": "cond"}, {"StepScopes": "inner_steps"},
                        {"sub_block": inner})
    block.append_op("while", {"Condition": "cond"}, {"StepScopes": "steps"},
                    {"sub_block": outer})
    assert (outer.parent_idx, inner.parent_idx) == (0, outer.idx)
    assert outer.var("inner_steps").kind == "step_scopes" and not block.has_var("inner_steps")
    again = headrace.Program.parse_from_string(prog.serialize_to_string())
    (owned,) = again.global_block().ops[0].sub_blocks()
    assert owned.ops[0].sub_blocks()[0].idx == inner.idx
