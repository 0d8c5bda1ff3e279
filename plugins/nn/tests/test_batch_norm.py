"""batch_norm: layouts, statistics dtypes, in-place running statistics, errors."""
import pytest

from headrace import Program
from headrace.errors import OpValidationError, ShapeError

STATS = ("Scale", "Bias", "Mean", "Variance")


def batch_norm(x_shape, c, x_dtype="float32", p_dtype="float32", attrs=None, stat_shapes=None,
               mean_out="mean", extra=None, x_lod=0):
    """Build one batch_norm the way the layer does: MeanOut/VarianceOut are Mean/Variance."""
    prog = Program()
    block = prog.global_block()
    inputs = {"X": block.create_var(name="x", shape=x_shape, dtype=x_dtype, lod_level=x_lod)}
    for slot in STATS:
        shape = (stat_shapes or {}).get(slot, [c])
        inputs[slot] = block.create_var(name=slot.lower(), shape=shape, dtype=p_dtype)
    for slot, (shape, dtype) in (extra or {}).items():
        inputs[slot] = block.create_var(name=slot.lower(), shape=shape, dtype=dtype)
    op = block.append_op("batch_norm", inputs, {"Y": "y", "MeanOut": mean_out,
                                                "VarianceOut": "variance"}, attrs or {})
    return block, op


@pytest.mark.parametrize("x_shape, layout, c", [
    ([8, 16], "NCHW", 16), ([8, 16, 5], "NCHW", 16), ([8, 16, 5, 5], "NCHW", 16),
    ([8, 16, 2, 5, 5], "NCHW", 16), ([8, 5, 5, 16], "NHWC", 16), ([8, 16], "NHWC", 16),
    ([-1, 16, -1, -1], "NCHW", 16), ([-1, -1, -1, 16], "NHWC", 16),
])
def test_shapes(x_shape, layout, c):
    block, op = batch_norm(x_shape, c, attrs={"data_layout": layout})
    assert block.var("y").shape == tuple(x_shape)
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        var = block.var(op.output(slot)[0])
        assert (var.shape, var.dtype) == ((c,), "float32")


def test_unknown_channels_take_the_statistics_size():
    block, op = batch_norm([-1, -1, 4, 4], 16)
    assert block.var(op.output("SavedMean")[0]).shape == (16,)


@pytest.mark.parametrize("x_dtype, p_dtype", [
    ("float16", "float32"), ("float32", "float32"), ("float64", "float64")])
def test_dtypes(x_dtype, p_dtype):
    block, op = batch_norm([2, 3, 4, 4], 3, x_dtype, p_dtype)
    assert block.var("y").dtype == x_dtype
    assert block.var(op.output("SavedVariance")[0]).dtype == p_dtype


def test_running_statistics_are_updated_in_place():
    block, op = batch_norm([2, 3, 4, 4], 3)
    assert op.output("MeanOut") == op.input("Mean") == ["mean"]
    assert op.output("VarianceOut") == op.input("Variance") == ["variance"]
    assert block.var("mean").shape == (3,)


def test_intermediates_are_created_and_y_keeps_the_lod():
    block, op = batch_norm([-1, 3], 3, x_lod=1)
    assert block.var("y").lod_level == 1
    # ReserveSpace is optional as well as intermediate: it is only created when asked for.
    assert op.output("ReserveSpace") == []
    assert op.output("SavedMean") and op.output("SavedVariance")


def test_momentum_tensor():
    block, _ = batch_norm([2, 3], 3, extra={"MomentumTensor": ([1], "float32")})
    assert block.var("y").shape == (2, 3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(x_shape=[8], c=8), r"X \(x\) must be 2-D to 5-D"),
    (dict(x_shape=[1, 2, 3, 4, 5, 6], c=2), r"X \(x\) must be 2-D to 5-D"),
    (dict(x_shape=[8, 16, 4, 4], c=4), r"Scale \(scale\) must hold one value per channel of X"),
    (dict(x_shape=[8, 4, 4, 16], c=16), r"Scale \(scale\) must hold one value per channel"),
    (dict(x_shape=[8, 16], c=16, stat_shapes={"Variance": [15]}),
     r"Variance \(variance\) must hold one value per channel"),
    (dict(x_shape=[8, -1], c=16, stat_shapes={"Bias": [15]}),
     r"Bias \(bias\) must hold one value per channel"),
    (dict(x_shape=[8, 16], c=16, stat_shapes={"Scale": [16, 1]}),
     r"Scale \(scale\) must hold one value per channel"),
    (dict(x_shape=[8, 16], c=16, x_dtype="float64"), r"Scale \(scale\) must be float64"),
    (dict(x_shape=[8, 16], c=16, x_dtype="float16", p_dtype="float64"),
     r"Scale \(scale\) must be float32 for float16 X"),
    (dict(x_shape=[8, 16], c=16, mean_out="mean_copy"),
     r"output 'MeanOut' must be the variable of input 'Mean'"),
    (dict(x_shape=[8, 16], c=16, extra={"MomentumTensor": ([2], "float32")}),
     r"MomentumTensor \(momentumtensor\) must hold one value"),
])
def test_shape_errors(kwargs, match):
    with pytest.raises(ShapeError, match=match):
        batch_norm(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(attrs={"epsilon": 0.01}), r"'epsilon' must be in \[0.0, 0.001\]"),
    (dict(attrs={"epsilon": -1e-6}), r"'epsilon' must be in"),
    (dict(attrs={"momentum": 1.5}), r"'momentum' must be in \[0.0, 1.0\]"),
    (dict(attrs={"data_layout": "AnyLayout"}), r"'data_layout' must be one of"),
    (dict(attrs={"is_test": 1}), r"'is_test' is not of type bool"),
    (dict(x_dtype="int32"), r"input 'X' \(x\) has an unsupported dtype"),
    (dict(p_dtype="float16"), r"input 'Scale' \(scale\) has an unsupported dtype"),
])
def test_validation_errors(kwargs, match):
    with pytest.raises(OpValidationError, match=match):
        batch_norm([2, 3], 3, **kwargs)
