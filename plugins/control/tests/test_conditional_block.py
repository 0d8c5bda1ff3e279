"""conditional_block: the condition rules, the Scope output, and its sub-block attribute."""
import pytest

import headrace
from headrace.errors import OpError, OpValidationError, ShapeError
from headrace.ops import default_registry


def program(cond_shapes=([1],), cond_dtype="bool"):
    prog = headrace.Program()
    block = prog.global_block()
    for i, shape in enumerate(cond_shapes):
        block.create_var(name=f"c{i}", shape=shape, dtype=cond_dtype)
    block.create_var(name="x", shape=[-1, 4], dtype="float32")
    block.create_var(name="n", shape=[1], dtype="int64")
    with prog.block_guard() as sub:
        sub.append_op("increment", {"X": "n"}, {"Out": "n"}, {"step": 1.0})
    return prog, block, sub


def append(block, sub, conds=("c0",), scalar=True, **extra):
    outputs = {"Out": ["n"], "Scope": ["scope"]}
    outputs.update(extra.pop("outputs", {}))
    attrs = {"sub_block": sub, "is_scalar_condition": scalar, **extra}
    return block.append_op("conditional_block", {"Cond": list(conds), "Input": ["x", "n"]},
                           outputs, attrs)


def test_runs_through_a_frame_kernel():
    # Control flow runs through kernels that drive sub-plans, on every device.
    opdef = default_registry().get("conditional_block")
    assert not opdef.no_kernel
    assert {"cpu", "cuda"} <= set(default_registry().kernels_for("conditional_block"))
    assert default_registry().kernel("conditional_block", "cpu").kind == "frame"
    assert opdef.attrs["sub_block"].required


def test_owns_its_sub_block():
    prog, block, sub = program()
    op = append(block, sub)
    assert op.sub_blocks() == [sub] and op.attr("sub_block") is sub
    assert sub.parent_idx == block.idx == 0 and prog.current_block() is block
    assert block.var("scope").kind == "step_scopes"
    assert block.var("n").shape == (1,)  # Out is left to the sub-block's ops


def test_serialize_keeps_the_block_attribute():
    prog, block, sub = program()
    append(block, sub)
    again = headrace.Program.parse_from_string(prog.serialize_to_string())
    op = again.global_block().ops[0]
    assert op.type == "conditional_block" and op.attr_type("sub_block") == "block"
    (owned,) = op.sub_blocks()
    assert owned.idx == 1 and owned.parent_idx == 0
    assert [o.type for o in owned.ops] == ["increment"]
    assert again.global_block().var("scope").kind == "step_scopes"
    assert again.serialize_to_string() == prog.serialize_to_string()


def test_sub_block_by_index():
    prog, block, sub = program()
    op = append(block, sub, sub_block=1)
    assert op.sub_blocks() == [sub]


@pytest.mark.parametrize("shape", [[1], [], [-1], [1, 1]])
def test_scalar_condition(shape):
    prog, block, sub = program([shape])
    append(block, sub)


@pytest.mark.parametrize("shape", [[2], [1, 3]])
def test_scalar_condition_of_several_elements(shape):
    prog, block, sub = program([shape])
    with pytest.raises(ShapeError, match=r"input 'Cond' \(c0\) must hold exactly one element"):
        append(block, sub)


def test_scalar_condition_takes_one_variable():
    prog, block, sub = program([[1], [1]])
    with pytest.raises(ShapeError, match=r"with is_scalar_condition, input 'Cond' holds one "
                                         r"variable(.|\n)*found:    2: \['c0', 'c1'\]"):
        append(block, sub, conds=("c0", "c1"))


def test_tensor_conditions():
    # Without is_scalar_condition the block runs when every Cond is non-empty: any shape.
    prog, block, sub = program([[-1, 3], [5]])
    op = append(block, sub, conds=("c0", "c1"), scalar=False)
    assert op.input("Cond") == ["c0", "c1"]


def test_a_scalar_condition_must_be_bool():
    prog, block, sub = program(cond_dtype="int32")
    with pytest.raises(ShapeError, match=r"with is_scalar_condition, input 'Cond' \(c0\) must "
                                         r"be bool(.|\n)*expected: bool(.|\n)*found: +int32"):
        append(block, sub, scalar=True)


def test_a_row_condition_may_be_any_tensor():
    # IfElse: a branch runs when the rows it received (float, say) are not empty.
    prog, block, sub = program(cond_dtype="float32")
    assert append(block, sub, scalar=False).input("Cond") == ["c0"]


def test_input_and_out_are_optional():
    prog, block, sub = program()
    op = block.append_op("conditional_block", {"Cond": ["c0"]}, {"Scope": ["s"]},
                         {"sub_block": sub})
    assert op.input("Input") == [] and op.output("Out") == []
    assert op.attr("is_scalar_condition") is False


def test_scope_must_be_a_step_scopes_variable():
    prog, block, sub = program()
    block.create_var(name="scope", shape=[1], dtype="float32")
    with pytest.raises(OpError, match=r"output 'Scope' \(scope\) is a lod_tensor variable"):
        append(block, sub)


@pytest.mark.parametrize("attrs, match", [
    ({"sub_block": None}, r"missing required attribute 'sub_block'"),
    ({"sub_block": 0}, r"'sub_block' must be a sub-block \(index >= 1\), not the global block"),
    ({"sub_block": "block1"}, r"'sub_block' is not of type block"),
    ({"sub_block": headrace.Program().create_block()}, r"not a block of this program"),
    ({"is_scalar_condition": 1}, r"'is_scalar_condition' is not of type bool"),
])
def test_attribute_errors(attrs, match):
    prog, block, sub = program()
    full = {"sub_block": sub, **attrs}
    full = {k: v for k, v in full.items() if v is not None}
    with pytest.raises(OpValidationError, match=match):
        block.append_op("conditional_block", {"Cond": ["c0"]}, {"Scope": ["s"]}, full)


def test_accepts_paddles_skip_eager_deletion_vars():
    prog, block, sub = program()
    op = append(block, sub, skip_eager_deletion_vars=["n"])
    assert op.attr("skip_eager_deletion_vars") == ["n"]
