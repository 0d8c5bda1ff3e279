"""sequence_pool: LoD levels, unknown sequence counts, attribute checks."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.ops import DictInferContext, VarMeta, default_registry
from headrace.testing import build_op

POOL_TYPES = ["AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"]


def pool(x_shape, lod_level=1, dtype="float32", **attrs):
    prog, op = build_op("sequence_pool", {"X": (x_shape, dtype, lod_level)},
                        outputs={"Out": 1, "MaxIndex": 1}, attrs=attrs)
    block = prog.global_block()
    return block.var(op.output("Out")[0]), block.var(op.output("MaxIndex")[0])


@pytest.mark.parametrize("x_shape, want", [
    ([-1, 16], (-1, 16)), ([20, 16], (-1, 16)), ([20, 4, 4], (-1, 4, 4)), ([20], (-1,))])
@pytest.mark.parametrize("pooltype", POOL_TYPES)
def test_one_unknown_row_count_per_sequence(x_shape, want, pooltype):
    out, max_index = pool(x_shape, pooltype=pooltype)
    assert (out.shape, out.dtype, out.lod_level) == (want, "float32", 0)
    assert (max_index.shape, max_index.dtype) == (want, "int32")


@pytest.mark.parametrize("lod_level", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_out_drops_one_lod_level(lod_level, dtype):
    out, _ = pool([-1, 8], lod_level, dtype, pooltype="SUM", pad_value=-1.0)
    assert (out.lod_level, out.dtype) == (lod_level - 1, dtype)


def test_max_index_is_created_when_not_bound():
    prog, op = build_op("sequence_pool", {"X": ([-1, 8], "float32", 1)},
                        attrs={"pooltype": "MAX"})
    assert prog.global_block().var(op.output("MaxIndex")[0]).dtype == "int32"


def test_a_plain_tensor_is_rejected_at_build_time():
    with pytest.raises(ShapeError, match=r"X \(x_0\) must be a sequence batch .*\n.*"
                                         r"expected: lod_level >= 1\n.*found:    lod_level 0"):
        pool([-1, 8], lod_level=0)


def test_run_time_inference_leaves_the_lod_to_the_kernel():
    # At run time the LoD travels with the tensor, not in the desc's lod_level.
    opdef = default_registry().get("sequence_pool")
    attrs = {name: a.default for name, a in opdef.attrs.items()}
    ctx = DictInferContext("sequence_pool", {"X": [VarMeta("x", (7, 3), "float32", 0,
                                                           "lod_tensor")]},
                           {"Out": ["out"], "MaxIndex": ["idx"]}, attrs, runtime=True)
    opdef.infer(ctx)
    assert ctx.results["Out"][0].shape == (-1, 3)


@pytest.mark.parametrize("shape, dtype, attrs, error, match", [
    ([], "float32", {}, ShapeError, r"X \(x_0\) must have a row dim"),
    ([-1, 8], "int64", {}, OpValidationError, r"input 'X' \(x_0\) has an unsupported dtype"),
    ([-1, 8], "float32", {"pooltype": "MEAN"}, OpValidationError, r"'pooltype' must be one of"),
    ([-1, 8], "float32", {"pooltype": "max"}, OpValidationError, r"'pooltype' must be one of"),
    ([-1, 8], "float32", {"pad_value": "0"}, OpValidationError, r"'pad_value' is not of type"),
])
def test_errors(shape, dtype, attrs, error, match):
    with pytest.raises(error, match=match):
        pool(shape, 1, dtype, **attrs)
