"""increment: one-element numeric counters."""
import re

import pytest

import headrace
from headrace import dtypes as dt
from headrace.errors import OpValidationError, ShapeError
from headrace.ops import default_registry
from headrace.testing import infer_shapes

NUMERIC = list(dt.INT_DTYPES) + list(dt.FLOAT_DTYPES)


def test_no_gradient():
    assert not default_registry().get("increment").differentiable


@pytest.mark.parametrize("dtype", NUMERIC)
def test_increment_dtypes(dtype):
    assert infer_shapes("increment", {"X": ([1], dtype)})["Out"] == [((1,), dtype)]


@pytest.mark.parametrize("shape", [[1], [], [-1], [1, 1], [-1, 1]])
def test_increment_one_element(shape):
    out = infer_shapes("increment", {"X": (shape, "int64")}, attrs={"step": -2.0})
    assert out["Out"] == [(tuple(shape), "int64")]


@pytest.mark.parametrize("shape", [[2], [1, 3], [0]])
def test_increment_of_several_elements(shape):
    with pytest.raises(ShapeError, match=r"input 'X' \(x_0\) must hold exactly one element"
                                         r"(.|\n)*found:    shape " + re.escape(str(shape))):
        infer_shapes("increment", {"X": (shape, "int64")})


@pytest.mark.parametrize("dtype", ["bool", "complex64"])
def test_increment_of_a_non_numeric(dtype):
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        infer_shapes("increment", {"X": ([1], dtype)})


def test_increment_in_place():
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="i", shape=[1], dtype="int32")
    op = block.append_op("increment", {"X": "i"}, {"Out": "i"})
    assert op.attr("step") == 1.0 and block.var("i").dtype == "int32"


def test_increment_step_is_a_float():
    with pytest.raises(OpValidationError, match=r"'step' is not of type float"):
        infer_shapes("increment", {"X": ([1], "int64")}, attrs={"step": "1"})
