"""transpose2: permutations, negative axes, unknown dims, XShape."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


@pytest.mark.parametrize("x, axis, expected", [
    ([2, 3, 4], [0, 2, 1], (2, 4, 3)),
    ([2, 3, 4], [2, 0, 1], (4, 2, 3)),
    ([2, 3, 4], [-1, 0, -2], (4, 2, 3)),
    ([-1, 3], [1, 0], (3, -1)),
    ([5], [0], (5,)),
    ([], [], ()),
])
def test_transpose2(x, axis, expected):
    out = infer_shapes("transpose2", {"X": (x, "float64")}, attrs={"axis": axis})
    assert out["Out"] == [(expected, "float64")]
    assert out["XShape"] == [((0,) + tuple(x), "float64")]


def test_transpose2_keeps_lod_level():
    prog, _ = build_op("transpose2", {"X": ([-1, 4], "float32", 1)}, attrs={"axis": [1, 0]})
    assert prog.global_block().var("out_out_0").lod_level == 1


@pytest.mark.parametrize("axis, match", [
    ([0, 1], r"one entry per dim of input 'X' \(x_0\)(.|\n)*expected: 3 entries"),
    ([0, 1, 1], r"not a permutation(.|\n)*each of 0..2 exactly once"),
    ([0, 1, -2], r"not a permutation"),  # -2 is 1 again
    ([0, 1, 3], r"out of range(.|\n)*entries in \[-3, 2\]"),
    ([0, 1, -4], r"out of range"),
])
def test_transpose2_errors(axis, match):
    with pytest.raises(ShapeError, match=match):
        infer_shapes("transpose2", {"X": ([2, 3, 4], "float32")}, attrs={"axis": axis})


def test_transpose2_axis_is_required():
    with pytest.raises(OpValidationError, match=r"missing required attribute 'axis'"):
        infer_shapes("transpose2", {"X": ([2, 3], "float32")})


def test_transpose2_accepts_paddles_data_format():
    out = infer_shapes("transpose2", {"X": ([2, 3], "float32")},
                       attrs={"axis": [1, 0], "data_format": "AnyLayout"})
    assert out["Out"] == [((3, 2), "float32")]


# == kernels ===================================================================================

import numpy as np  # noqa: E402

from headrace.runtime import Tensor  # noqa: E402
from headrace.testing import check_op  # noqa: E402
from headrace_tensor.kernels.cpu import transpose as ktranspose  # noqa: E402

NUMPY_TYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
               "float64", "complex64", "complex128"]  # every element size: 1, 2, 4, 8, 16


def expect(x, axis):
    return {"Out": np.transpose(x, axis), "XShape": np.empty((0,) + x.shape, x.dtype)}


@pytest.mark.parametrize("shape, axis", [
    ((5, 7), [1, 0]),                   # 2-D: blocked tiles
    ((67, 45), [1, 0]),                 # tiles with ragged edges
    ((3, 40, 33), [0, 2, 1]),           # batched 2-D
    ((2, 3, 4, 5), [0, 2, 3, 1]),       # NCHW -> NHWC: merged to a batched 2-D
    ((2, 3, 4, 5), [0, 3, 1, 2]),       # NHWC -> NCHW
    ((2, 3, 4), [2, 0, 1]),             # general
    ((2, 3, 4, 5), [3, 1, 0, 2]),       # general
    ((2, 3, 4, 5), [1, 0, 2, 3]),       # trailing dims untouched: memcpy'd runs
    ((2, 5, 3, 7), [0, 2, 1, 3]),       # attention heads split off: runs of 7
    ((3, 1, 2, 5), [1, 2, 0, 3]),       # runs, a size-1 dim dropped
    ((2, 1, 4, 1), [3, 2, 1, 0]),       # size-1 dims dropped
    ((2, 3, 4), [0, 1, 2]),             # identity: a copy
    ((2, 3, 4), [-1, 0, -2]),           # negative axes
    ((7,), [0]),
    ((3, 0, 2), [2, 1, 0]),             # empty
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transpose2_kernel(shape, axis, dtype):
    x = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    check_op("transpose2", {"X": x}, expect(x, axis), attrs={"axis": axis})


@pytest.mark.parametrize("name", NUMPY_TYPES)
@pytest.mark.parametrize("shape, axis", [((9, 5), [1, 0]), ((2, 3, 4), [1, 2, 0]),
                                         ((2, 3, 4), [0, 2, 1]), ((2, 3, 4), [1, 0, 2])])
def test_transpose2_kernel_dtypes(name, shape, axis):
    x = (np.arange(int(np.prod(shape))) % 7).astype(name).reshape(shape)
    if name.startswith("complex"):
        x = x + 1j * x[::-1]
    check_op("transpose2", {"X": x}, expect(x, axis), attrs={"axis": axis})


def test_transpose2_strided_read_only_and_lod():
    x = np.arange(60.0).reshape(3, 4, 5)[:, ::2, 1:]
    x.flags.writeable = False
    check_op("transpose2", {"X": x}, expect(x, [2, 0, 1]), attrs={"axis": [2, 0, 1]})
    y = np.arange(12.0).reshape(3, 2, 2)
    check_op("transpose2", {"X": Tensor(y, [[0, 1, 3]])},
             {"Out": Tensor(y.transpose(0, 2, 1), [[0, 1, 3]])}, attrs={"axis": [0, 2, 1]})


def test_transpose2_zero_d_direct():
    out, xshape = ktranspose.Transpose2({"axis": []})(np.array(2.5))
    assert out.shape == () and out == 2.5 and xshape.shape == (0,)


def test_transpose2_output_is_new_and_contiguous():
    x = np.arange(6.0).reshape(2, 3)
    out, xshape = ktranspose.Transpose2({"axis": [1, 0]})(x)
    assert out.flags.c_contiguous and not np.shares_memory(out, x)
    assert xshape.shape == (0, 2, 3)
    (same, _) = ktranspose.Transpose2({"axis": [0, 1]})(x)
    assert not np.shares_memory(same, x)


@pytest.mark.parametrize("axis, x, error, match", [
    ([1, 0, 2], np.ones((2, 3)), ValueError, r"axis \[1, 0, 2\] needs one entry per dim"),
    ([0, 0], np.ones((2, 3)), ValueError, r"is not a permutation"),
    ([0, 2], np.ones((2, 3)), ValueError, r"is not a permutation"),
    ([0, -3], np.ones((2, 3)), ValueError, r"is not a permutation"),
    ([0], "x", TypeError, r"input 'X' must be a dense tensor"),
    ([0], np.array([object()]), TypeError, r"dtype object"),
])
def test_transpose2_direct_bad_inputs(axis, x, error, match):
    with pytest.raises(error, match=match):
        ktranspose.Transpose2({"axis": axis})(x)


# == gradients =================================================================================

from headrace.ops.grad import GradContext  # noqa: E402
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("shape, axis", [
    ((3, 4), [1, 0]),
    ((3, 4), [0, 1]),
    ((3, 4), [-1, -2]),
    ((2, 3, 4), [2, 0, 1]),
    ((2, 3, 4), [0, 2, 1]),
    ((2, 3, 4), [-1, 0, -2]),
    ((2, 3, 2, 3), [0, 2, 3, 1]),
    ((2, 3, 2, 3), [3, 1, 0, 2]),
    ((2, 1, 3, 2), [-1, -2, -3, -4]),
])
def test_transpose2_gradient(shape, axis):
    x = np.random.default_rng(0).standard_normal(shape)
    check_grad("transpose2", {"X": x}, wrt=["X"], attrs={"axis": axis})


def test_gradient_reads_xshape_not_x():
    prog, op = build_op("transpose2", {"X": ([3, 4, 5], "float32")}, attrs={"axis": [2, 0, 1]})
    (spec,) = op.opdef.grad(GradContext(op, {"x_0"}, {"out_out_0@GRAD"}))
    assert spec.type == "transpose2_grad"
    assert spec.inputs == {"XShape": op.output("XShape"), "Out@GRAD": ["out_out_0@GRAD"]}
    assert spec.outputs == {"X@GRAD": ["x_0@GRAD"]}
    assert spec.attrs["axis"] == [2, 0, 1]


@pytest.mark.parametrize("xshape, dout, axis, expected", [
    ([0, 2, 3, 4], [4, 2, 3], [2, 0, 1], (2, 3, 4)),
    ([0, 2, 3, 4], [4, 2, 3], [-1, 0, -2], (2, 3, 4)),
    ([0, -1, 3], [3, -1], [1, 0], (-1, 3)),
    ([0, 5], [5], [0], (5,)),
])
def test_transpose2_grad_shape_rule(xshape, dout, axis, expected):
    out = infer_shapes("transpose2_grad", {"XShape": (xshape, "float64"),
                                           "Out@GRAD": (dout, "float64")},
                       outputs={"X@GRAD": 1}, attrs={"axis": axis})
    assert out["X@GRAD"] == [(expected, "float64")]


@pytest.mark.parametrize("xshape, dout, axis, match", [
    ([0, 2, 3], [2, 3], [1, 0], r"must have the shape of Out(.|\n)*shape \[3, 2\]"),
    ([0, 2, 3], [3, 2], [1, 0, 2], r"one entry per dim of X \(XShape\[1:\]\)"),
    ([0, 2, 3], [3, 2], [1, 1], r"not a permutation"),
    ([0, 2, 3], [3, 2, 1], [1, 0], r"must have the shape of Out"),
])
def test_transpose2_grad_shape_rule_errors(xshape, dout, axis, match):
    with pytest.raises(ShapeError, match=match):
        infer_shapes("transpose2_grad", {"XShape": (xshape, "float32"),
                                         "Out@GRAD": (dout, "float32")},
                     outputs={"X@GRAD": 1}, attrs={"axis": axis})


@pytest.mark.parametrize("shape, axis", [
    ((5, 7), [1, 0]), ((67, 45), [1, 0]), ((3, 40, 33), [0, 2, 1]), ((2, 3, 4, 5), [0, 2, 3, 1]),
    ((2, 3, 4, 5), [3, 1, 0, 2]), ((2, 1, 4, 1), [3, 2, 1, 0]), ((2, 3, 4), [-1, 0, -2]),
    ((3, 0, 2), [2, 1, 0]), ((7,), [0]),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transpose2_grad_kernel(shape, axis, dtype):
    out_shape = np.empty(shape).transpose(axis).shape
    g = np.arange(int(np.prod(shape)), dtype=dtype).reshape(out_shape)
    check_op("transpose2_grad", {"XShape": np.empty((0,) + shape, dtype), "Out@GRAD": g},
             {"X@GRAD": np.transpose(g, np.argsort([a % len(shape) for a in axis]))},
             attrs={"axis": axis})


def test_transpose2_grad_kernel_strided_and_read_only():
    g = np.arange(120.0).reshape(4, 5, 6)[:, :, ::2]  # Out@GRAD of X [3, 4, 5], axis [1, 2, 0]
    g.flags.writeable = False
    (dx,) = ktranspose.Transpose2Grad({"axis": [1, 2, 0]})(np.empty((0, 3, 4, 5)), g)
    np.testing.assert_array_equal(dx, g.transpose(2, 0, 1))
    assert dx.flags.c_contiguous


@pytest.mark.parametrize("axis, xshape, dout, error, match", [
    ([1, 0], np.empty((0, 2, 3)), np.ones((2, 3)), ValueError,
     r"Out@GRAD has shape \[2, 3\], expected Out's shape \[3, 2\]"),
    ([1, 0, 2], np.empty((0, 2, 3)), np.ones((3, 2)), ValueError, r"needs one entry per dim"),
    ([0, 0], np.empty((0, 2, 3)), np.ones((2, 3)), ValueError, r"is not a permutation"),
    ([1, 0], np.empty((0, 2, 3), "float32"), np.ones((3, 2)), TypeError,
     r"Out@GRAD is float64 but X \(XShape\) is float32"),
    ([1, 0], np.empty((0, 2, 3), "int64"), np.ones((3, 2), "int64"), TypeError,
     r"Out@GRAD has dtype int64; supported: float32, float64"),
    ([], np.empty(()), np.ones(()), ValueError, r"XShape must be \[0\] \+ X.dims"),
    ([0], "x", np.ones(2), TypeError, r"input 'XShape' must be a dense tensor"),
    ([0], np.empty((0, 2)), None, TypeError, r"input 'Out@GRAD' must be a dense tensor"),
])
def test_transpose2_grad_direct_bad_inputs(axis, xshape, dout, error, match):
    with pytest.raises(error, match=match):
        ktranspose.Transpose2Grad({"axis": axis})(xshape, dout)
