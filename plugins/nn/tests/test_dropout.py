"""dropout: shapes, the uint8 Mask, attribute checks."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


@pytest.mark.parametrize("shape", [(8, 16), (-1, 16), (2, 3, 4, 5), (7,), ()])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_out_and_mask(shape, dtype):
    out = infer_shapes("dropout", {"X": (shape, dtype)}, outputs={"Out": 1, "Mask": 1})
    assert out == {"Out": [(shape, dtype)], "Mask": [(shape, "uint8")]}


@pytest.mark.parametrize("attrs", [
    {}, {"is_test": True}, {"dropout_prob": 0.0}, {"dropout_prob": 1.0},
    {"dropout_implementation": "upscale_in_train", "fix_seed": True, "seed": 7},
])
def test_mask_is_created_and_out_keeps_the_lod(attrs):
    prog, op = build_op("dropout", {"X": ([-1, 4], "float32", 1)}, attrs=attrs)
    block = prog.global_block()
    assert block.var(op.output("Out")[0]).lod_level == 1
    assert block.var(op.output("Mask")[0]).dtype == "uint8"


@pytest.mark.parametrize("seed_shape", [[1], [-1]])
def test_seed_tensor(seed_shape):
    out = infer_shapes("dropout", {"X": ([4, 4], "float32"), "Seed": (seed_shape, "int32")})
    assert out["Out"] == [((4, 4), "float32")]


def test_seed_tensor_must_hold_one_value():
    with pytest.raises(ShapeError, match=r"Seed \(seed_0\) must hold one value"):
        infer_shapes("dropout", {"X": ([4, 4], "float32"), "Seed": ([2], "int32")})


@pytest.mark.parametrize("inputs, attrs, match", [
    ({}, {"dropout_prob": 1.5}, r"'dropout_prob' must be in \[0.0, 1.0\]"),
    ({}, {"dropout_prob": -0.1}, r"'dropout_prob' must be in"),
    ({}, {"dropout_implementation": "upscale_in_infer"}, r"'dropout_implementation' must be"),
    ({}, {"seed": 1.0}, r"'seed' is not of type int"),
    ({"X": ([4], "int64")}, {}, r"input 'X' \(x_0\) has an unsupported dtype"),
    ({"Seed": ([1], "int64")}, {}, r"input 'Seed' \(seed_0\) has an unsupported dtype"),
])
def test_validation_errors(inputs, attrs, match):
    inputs = {"X": ([4], "float32"), **inputs}
    with pytest.raises(OpValidationError, match=match):
        infer_shapes("dropout", inputs, attrs=attrs)
