"""reshape2 and flatten_contiguous_range: the shape rules, unknown dims, XShape."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


def reshape(x_shape, shape, inputs=None, dtype="float32"):
    ins = {"X": (x_shape, dtype), **(inputs or {})}
    return infer_shapes("reshape2", ins, attrs={"shape": shape})


@pytest.mark.parametrize("x, shape, expected", [
    ([2, 3, 4], [6, 4], (6, 4)),
    ([2, 3, 4], [-1], (24,)),
    ([2, 3, 4], [0, -1], (2, 12)),
    ([2, 3, 4], [0, 0, -1], (2, 3, 4)),
    ([2, 3, 4], [4, -1, 2], (4, 3, 2)),
    ([2, 3, 4], [1, 24, 1], (1, 24, 1)),
    ([1], [], ()),
    ([], [1, 1], (1, 1)),
    ([0, 3], [-1, 3], (0, 3)),
    # an unknown batch dim copied with 0 cancels: the rest is still checked and inferred
    ([-1, 3, 4], [0, -1], (-1, 12)),
    ([-1, 3, 4], [0, 12], (-1, 12)),
    ([-1, 3, 4], [-1, 12], (-1, 12)),
    ([-1, 3, 4], [-1, 5], (-1, 5)),  # not checkable at build time
    ([2, -1], [0, 2, -1], (2, 2, -1)),
])
def test_reshape2(x, shape, expected):
    out = reshape(x, shape)
    assert out["Out"] == [(expected, "float32")]
    assert out["XShape"] == [((0,) + tuple(x), "float32")]


def test_reshape2_keeps_dtype_and_lod_level():
    prog, op = build_op("reshape2", {"X": ([-1, 2], "int64", 1)}, attrs={"shape": [-1]})
    block = prog.global_block()
    out, xshape = block.var("out_out_0"), block.var(op.output("XShape")[0])
    assert (out.shape, out.dtype, out.lod_level) == ((-1,), "int64", 1)
    assert (xshape.shape, xshape.dtype) == ((0, -1, 2), "int64")


def test_reshape2_explicit_xshape():
    prog, op = build_op("reshape2", {"X": ([6], "float32")}, outputs={"Out": 1, "XShape": 1},
                        attrs={"shape": [2, 3]})
    assert op.output("XShape") == ["xshape_out_0"]
    assert prog.global_block().var("xshape_out_0").shape == (0, 6)


@pytest.mark.parametrize("x, shape, match", [
    ([2, 3], [-1, -1], r"at most one -1"),
    ([2, 3], [2, 0, 0, 3], r"copies dim 2 \(0\) of input 'X' \(x_0\), which has only 2 dims"),
    ([2, 3], [-2, 3], r"negative dim other than -1"),
    ([2, 3], [5], r"cannot be reshaped to \[5\](.|\n)*found:    6 vs 5"),
    ([2, 3], [4, -1], r"the -1 dim is not a whole number(.|\n)*a multiple of 4"),
    ([-1, 3, 4], [0, 5], r"cannot be reshaped(.|\n)*12 vs 5"),
    ([-1, 3, 4], [0, 5, -1], r"not a whole number"),
])
def test_reshape2_errors(x, shape, match):
    with pytest.raises(ShapeError, match=match):
        reshape(x, shape)


@pytest.mark.parametrize("attr, expected", [([], (-1, -1, -1)), ([0, -1, 5], (2, -1, 5))])
def test_reshape2_shape_input(attr, expected):
    out = reshape([2, 3, 5], attr, {"Shape": ([3], "int32")})
    assert out["Out"] == [(expected, "float32")]


def test_reshape2_shape_input_of_unknown_length():
    assert reshape([2, 3], [0, -1], {"Shape": ([-1], "int32")})["Out"] == [((2, -1), "float32")]
    with pytest.raises(ShapeError, match=r"length of input 'Shape' \(shape_0\) is unknown"):
        reshape([2, 3], [], {"Shape": ([-1], "int32")})


def test_reshape2_shape_input_must_be_1d():
    with pytest.raises(ShapeError, match=r"input 'Shape' \(shape_0\) must be 1-D"):
        reshape([2, 3], [], {"Shape": ([1, 2], "int32")})
    with pytest.raises(OpValidationError, match=r"'Shape' \(shape_0\) has an unsupported dtype"):
        reshape([2, 3], [], {"Shape": ([2], "float32")})


def test_reshape2_shape_tensor_list():
    tensors = {"ShapeTensor": [([1], "int32"), ([1], "int64")]}
    assert reshape([4, 6], [], tensors)["Out"] == [((-1, -1), "float32")]
    assert reshape([4, 6], [0, -1], tensors)["Out"] == [((4, -1), "float32")]
    # ShapeTensor wins over Shape, as in Paddle
    both = {**tensors, "Shape": ([3], "int32")}
    assert reshape([4, 6], [], both)["Out"] == [((-1, -1), "float32")]


@pytest.mark.parametrize("inputs, shape, match", [
    ({"ShapeTensor": [([1], "int32")] * 2}, [1, 2, 3], r"'shape' and input 'ShapeTensor' "
                                                       r"disagree(.|\n)*expected: 2 dims"),
    ({"Shape": ([2], "int32")}, [0, 0, 0], r"'shape' and input 'Shape' disagree"),
    ({"ShapeTensor": [([2], "int32")]}, [], r"'ShapeTensor' \(shapetensor_0\) must hold "
                                            r"exactly one element"),
    ({"ShapeTensor": [([1], "int32")] * 3}, [0, 0, 0], r"copies dim 2 \(0\)"),
])
def test_reshape2_shape_tensor_errors(inputs, shape, match):
    with pytest.raises(ShapeError, match=match):
        reshape([4, 6], shape, inputs)


# -- flatten_contiguous_range ----------------------------------------------------------------

@pytest.mark.parametrize("x, start, stop, expected", [
    ([2, 3, 4, 5], 1, 2, (2, 12, 5)),
    ([2, 3, 4, 5], 0, -1, (120,)),
    ([2, 3, 4, 5], -3, -2, (2, 12, 5)),
    ([2, 3, 4, 5], 1, 3, (2, 60)),
    ([2, 3, 4, 5], 2, 2, (2, 3, 4, 5)),
    ([-1, 3, 4], 1, 2, (-1, 12)),
    ([-1, 3, 4], 0, 1, (-1, 4)),
    ([7], 0, 0, (7,)),
    ([], 0, 0, (1,)),
    ([], 0, -1, (1,)),
])
def test_flatten(x, start, stop, expected):
    out = infer_shapes("flatten_contiguous_range", {"X": (x, "int32")},
                       attrs={"start_axis": start, "stop_axis": stop})
    assert out["Out"] == [(expected, "int32")]
    assert out["XShape"] == [((0,) + tuple(x), "int32")]


def test_flatten_defaults_merge_nothing():
    out = infer_shapes("flatten_contiguous_range", {"X": ([2, 3, 4], "float32")})
    assert out["Out"] == [((2, 3, 4), "float32")]


@pytest.mark.parametrize("start, stop, match", [
    (2, 1, r"'start_axis' comes after 'stop_axis'(.|\n)*start_axis=2 \(2\), stop_axis=1 \(1\)"),
    (-1, 0, r"'start_axis' comes after 'stop_axis'"),
    (3, 3, r"attribute 'start_axis' is out of range for a rank-3 input"),
    (0, -4, r"attribute 'stop_axis' is out of range(.|\n)*stop_axis in \[-3, 2\]"),
])
def test_flatten_errors(start, stop, match):
    with pytest.raises(ShapeError, match=match):
        infer_shapes("flatten_contiguous_range", {"X": ([2, 3, 4], "float32")},
                     attrs={"start_axis": start, "stop_axis": stop})
