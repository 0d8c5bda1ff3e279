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


# == kernels ===================================================================================

import numpy as np  # noqa: E402

import headrace  # noqa: E402
from headrace.errors import OpError  # noqa: E402
from headrace.runtime import Executor, Scope, Tensor  # noqa: E402
from headrace.runtime.kernel_info import kernel_info  # noqa: E402
from headrace.testing import check_op  # noqa: E402
from headrace_tensor.kernels.cpu import reshape as kreshape  # noqa: E402

NUMPY_TYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
               "float64", "complex64", "complex128"]


def expect(x, out):
    return {"Out": out, "XShape": np.empty((0,) + x.shape, x.dtype)}


@pytest.mark.parametrize("x_shape, shape, expected", [
    ((2, 3, 4), [6, 4], (6, 4)),
    ((2, 3, 4), [-1], (24,)),
    ((2, 3, 4), [0, -1], (2, 12)),
    ((2, 3, 4), [0, 0, -1], (2, 3, 4)),
    ((2, 3, 4), [4, -1, 2], (4, 3, 2)),
    ((2, 3, 4), [1, 24, 1], (1, 24, 1)),
    ((1,), [], ()),
    ((0, 3), [-1, 3], (0, 3)),
    ((2, 0, 4), [0, -1], (2, 0)),  # copied dims leave the count: a 0-size X still infers
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reshape2_kernel(x_shape, shape, expected, dtype):
    x = np.arange(int(np.prod(x_shape)), dtype=dtype).reshape(x_shape)
    check_op("reshape2", {"X": x}, expect(x, x.reshape(expected)), attrs={"shape": shape})


@pytest.mark.parametrize("name", NUMPY_TYPES)
def test_reshape2_kernel_dtypes(name):
    x = (np.arange(12) % 3).astype(name).reshape(3, 4)
    check_op("reshape2", {"X": x}, expect(x, x.reshape(2, 6)), attrs={"shape": [2, -1]})


@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_reshape2_shape_from_tensors(index_type):
    x = np.arange(24.0).reshape(2, 3, 4)
    check_op("reshape2", {"X": x, "Shape": np.array([0, -1, 2], index_type)},
             expect(x, x.reshape(2, 6, 2)), attrs={"shape": []})
    tensors = [np.array([4], index_type), np.array(-1, index_type)]
    check_op("reshape2", {"X": x, "ShapeTensor": tensors}, expect(x, x.reshape(4, 6)),
             attrs={"shape": [4, -1]})
    # ShapeTensor beats Shape beats the attribute
    check_op("reshape2", {"X": x, "Shape": np.array([24], index_type), "ShapeTensor": tensors},
             expect(x, x.reshape(4, 6)), attrs={"shape": []})


def test_reshape2_keeps_lod_and_reads_strided_inputs():
    x = np.arange(48.0).reshape(4, 12)[:, ::2]
    check_op("reshape2", {"X": Tensor(x, [[0, 1, 4]])},
             {"Out": Tensor(x.reshape(4, 3, 2), [[0, 1, 4]])}, attrs={"shape": [0, 3, 2]})


def test_zero_d_direct():
    # (Through the executor a fed 0-D array arrives as shape [1]; see the report.)
    x = np.array(5.0)
    out, xshape = kreshape.Reshape2({"shape": [1, 1]})(x)
    assert out.shape == (1, 1) and xshape.shape == (0,)
    out, _ = kreshape.Reshape2({"shape": []})(np.array([3]))
    assert out.shape == () and out == 3
    out, xshape = kreshape.FlattenContiguousRange({"start_axis": 0, "stop_axis": -1})(x)
    assert out.shape == (1,) and xshape.shape == (0,)


def test_reshape2_returns_a_view_of_a_contiguous_input():
    x = np.arange(6.0)
    out, xshape = kreshape.Reshape2({"shape": [2, 3]})(x)
    assert np.shares_memory(out, x) and out.shape == (2, 3)
    assert xshape.shape == (0, 6) and xshape.dtype == x.dtype and xshape.size == 0
    strided = np.arange(12.0)[::2]
    out, _ = kreshape.Reshape2({"shape": [3, 2]})(strided)
    assert not np.shares_memory(out, strided)
    np.testing.assert_array_equal(out, strided.reshape(3, 2))


def persistable_info(op_type, attrs, persistable):
    prog, op = build_op(op_type, {"X": ([6], "float32")}, attrs=attrs)
    for name in persistable:
        prog.global_block().var(name).persistable = True
    return kernel_info(op)


@pytest.mark.parametrize("persistable", [["x_0"], ["out_out_0"]])
@pytest.mark.parametrize("op_type, attrs", [("reshape2", {"shape": [2, 3]}),
                                            ("flatten_contiguous_range",
                                             {"start_axis": 0, "stop_axis": 0})])
def test_no_view_of_or_as_a_persistable_variable(persistable, op_type, attrs):
    cls = kreshape.Reshape2 if op_type == "reshape2" else kreshape.FlattenContiguousRange
    full = {"shape": [2, 3]} if op_type == "reshape2" else {"start_axis": 0, "stop_axis": 0}
    kernel = cls(full, persistable_info(op_type, attrs, persistable))
    x = np.arange(6, dtype="float32")
    out, _ = kernel(x)
    assert not np.shares_memory(out, x) and out.flags.writeable
    np.testing.assert_array_equal(out.reshape(-1), x)


def test_reshape2_of_a_parameter_in_a_program():
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="w", shape=[2, 3], dtype="float32", persistable=True)
    block.append_op("reshape2", {"X": "w"}, {"Out": "flat"}, {"shape": [-1]})
    scope = Scope()
    w = np.arange(6, dtype="float32").reshape(2, 3)
    scope.set("w", Tensor(w))
    (flat,) = Executor().run(prog, fetch_list=["flat"], scope=scope)
    np.testing.assert_array_equal(flat, w.reshape(-1))


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((np.ones((2, 3)),), {"shape": [4]}, ValueError, r"\(6 elements\) cannot be reshaped to "
                                                      r"\[4\]"),
    ((np.ones((2, 3)),), {"shape": [-1, -1]}, ValueError, r"more than one -1"),
    ((np.ones((2, 3)),), {"shape": [4, -1]}, ValueError, r"the -1 dim is not a whole number"),
    ((np.ones((2, 3)),), {"shape": [0, 3, 0]}, ValueError, r"copies dim 2 \(0\) of X"),
    ((np.ones((2, 3)),), {"shape": [-2, 3]}, ValueError, r"negative dim other than -1"),
    ((np.ones((2, 3)), np.array([6.0])), {"shape": []}, TypeError, r"'Shape' must hold "
                                                                   r"integers"),
    ((np.ones((2, 3)), None, [np.array([2, 3])]), {"shape": []}, ValueError,
     r"'ShapeTensor\[0\]' must hold exactly one element"),
    (([1, 2],), {"shape": [2]}, TypeError, r"input 'X' must be a dense tensor"),
    ((np.array([None, None]),), {"shape": [2]}, TypeError, r"dtype object"),
])
def test_reshape2_direct_bad_inputs(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        kreshape.Reshape2(kwargs)(*args)


def test_reshape2_runtime_shape_mismatch_is_an_op_error():
    x = np.ones((2, 3), "float32")
    with pytest.raises(OpError, match=r"reshape2"):
        check_op("reshape2", {"X": x, "Shape": np.array([5], "int32")},
                 expect(x, x), attrs={"shape": []})


@pytest.mark.parametrize("x_shape, start, stop, expected", [
    ((2, 3, 4, 5), 1, 2, (2, 12, 5)),
    ((2, 3, 4, 5), 0, -1, (120,)),
    ((2, 3, 4, 5), -3, -2, (2, 12, 5)),
    ((2, 3, 4, 5), 2, 2, (2, 3, 4, 5)),
    ((2, 0, 4), 0, 1, (0, 4)),
    ((7,), 0, 0, (7,)),
])
@pytest.mark.parametrize("name", ["float32", "float64", "int64", "bool"])
def test_flatten_kernel(x_shape, start, stop, expected, name):
    x = (np.arange(int(np.prod(x_shape))) % 4).astype(name).reshape(x_shape)
    check_op("flatten_contiguous_range", {"X": x}, expect(x, x.reshape(expected)),
             attrs={"start_axis": start, "stop_axis": stop})


@pytest.mark.parametrize("start, stop, error, match", [
    (2, 1, ValueError, r"start_axis 2 \(2\) comes after stop_axis 1 \(1\)"),
    (3, 3, IndexError, r"start_axis 3 is out of range for rank 3"),
    (0, -4, IndexError, r"stop_axis -4 is out of range for rank 3"),
])
def test_flatten_direct_bad_axes(start, stop, error, match):
    with pytest.raises(error, match=match):
        kreshape.FlattenContiguousRange({"start_axis": start, "stop_axis": stop})(
            np.ones((2, 3, 4)))


# == gradients =================================================================================

from headrace.ops.grad import GradContext  # noqa: E402
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("x_shape, shape", [
    ((6,), [2, 3]),
    ((2, 3, 4), [6, 4]),
    ((2, 3, 4), [-1]),
    ((2, 3, 4), [0, -1]),
    ((2, 3, 4), [4, -1, 2]),
    ((2, 3, 4), [0, 0, -1]),
    ((3, 1, 4), [1, -1, 1, 3]),
    ((1,), []),
])
def test_reshape2_gradient(x_shape, shape):
    x = np.random.default_rng(0).standard_normal(x_shape)
    check_grad("reshape2", {"X": x}, wrt=["X"], attrs={"shape": shape})


@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_reshape2_gradient_with_shape_tensors(index_type):
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    check_grad("reshape2", {"X": x, "Shape": np.array([0, -1, 2], index_type)}, wrt=["X"],
               attrs={"shape": []})
    check_grad("reshape2", {"X": x, "ShapeTensor": [np.array([4], index_type),
                                                    np.array([-1], index_type)]},
               wrt=["X"], attrs={"shape": [4, -1]})


@pytest.mark.parametrize("x_shape, start, stop", [
    ((2, 3, 4, 5), 1, 2),
    ((2, 3, 4, 5), 0, -1),
    ((2, 3, 4, 5), -3, -2),
    ((2, 3, 4), -2, -1),
    ((2, 3, 4), 1, 1),
    ((5,), 0, 0),
])
def test_flatten_gradient(x_shape, start, stop):
    x = np.random.default_rng(2).standard_normal(x_shape)
    check_grad("flatten_contiguous_range", {"X": x}, wrt=["X"],
               attrs={"start_axis": start, "stop_axis": stop})


@pytest.mark.parametrize("op_type, attrs", [
    ("reshape2", {"shape": [-1, 2]}),
    ("flatten_contiguous_range", {"start_axis": 0, "stop_axis": -1}),
])
def test_gradient_reads_xshape_not_x(op_type, attrs):
    prog, op = build_op(op_type, {"X": ([3, 4], "float32")}, attrs=attrs)
    ctx = GradContext(op, {"x_0"}, {"out_out_0@GRAD"})
    (spec,) = op.opdef.grad(ctx)
    assert spec.type == op_type + "_grad"
    assert spec.inputs == {"XShape": op.output("XShape"), "Out@GRAD": ["out_out_0@GRAD"]}
    assert spec.outputs == {"X@GRAD": ["x_0@GRAD"]}


def test_reshape2_gradient_of_an_unknown_batch_dim():
    # X@GRAD's shape comes from XShape: [-1, 3, 4] carries through to the gradient
    prog, _ = build_op("reshape2", {"X": {"shape": [-1, 3, 4], "dtype": "float64",
                                          "stop_gradient": False}}, attrs={"shape": [0, -1]})
    block = prog.global_block()
    (g,) = headrace.gradients([block.var("out_out_0")], [block.var("x_0")])
    assert g.shape == (-1, 3, 4) and g.dtype == "float64"
    x = np.random.default_rng(3).standard_normal((5, 3, 4))
    (got,) = Executor().run(prog, feed={"x_0": x}, fetch_list=[g], scope=Scope())
    np.testing.assert_array_equal(got, np.ones((5, 3, 4)))


@pytest.mark.parametrize("op_type", ["reshape2_grad", "flatten_contiguous_range_grad"])
@pytest.mark.parametrize("xshape, dout, expected", [
    ([0, 2, 3], ([6], "float32"), (2, 3)),
    ([0, -1, 3], ([-1], "float64"), (-1, 3)),
    ([0], ([1], "float32"), ()),
])
def test_reshape_grad_shape_rule(op_type, xshape, dout, expected):
    out = infer_shapes(op_type, {"XShape": (xshape, dout[1]), "Out@GRAD": dout},
                       outputs={"X@GRAD": 1})
    assert out["X@GRAD"] == [(expected, dout[1])]


@pytest.mark.parametrize("xshape, dout, match", [
    (([0, 2, 3], "float32"), ([5], "float32"), r"as many elements as X(.|\n)*expected: 6"),
    (([0, 2, 3], "float32"), ([6], "float64"), r"must have the dtype of X"),
    (([], "float32"), ([1], "float32"), r"XShape.*must be \[0\] \+ X.dims"),
])
def test_reshape_grad_shape_rule_errors(xshape, dout, match):
    with pytest.raises(ShapeError, match=match):
        infer_shapes("reshape2_grad", {"XShape": xshape, "Out@GRAD": dout},
                     outputs={"X@GRAD": 1})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reshape_grad_kernel(dtype):
    g = np.arange(24, dtype=dtype).reshape(4, 6)
    xshape = np.empty((0, 2, 3, 4), dtype)
    check_op("reshape2_grad", {"XShape": xshape, "Out@GRAD": g},
             {"X@GRAD": g.reshape(2, 3, 4)}, attrs={"shape": [4, 6]})
    g = np.arange(24, dtype=dtype).reshape(6, 4)  # X [2, 3, 4] with dims 0..1 merged
    check_op("flatten_contiguous_range_grad", {"XShape": xshape, "Out@GRAD": g},
             {"X@GRAD": g.reshape(2, 3, 4)}, attrs={"start_axis": 0, "stop_axis": 1})


def test_reshape_grad_kernel_views_and_copies():
    g = np.arange(6.0)
    (dx,) = kreshape.ReshapeGrad({})(np.empty((0, 2, 3)), g)
    assert np.shares_memory(dx, g) and dx.shape == (2, 3)
    strided = np.arange(12.0)[::2]
    (dx,) = kreshape.ReshapeGrad({})(np.empty((0, 3, 2)), strided)
    assert not np.shares_memory(dx, strided)
    np.testing.assert_array_equal(dx, strided.reshape(3, 2))
    readonly = np.arange(6.0)
    readonly.flags.writeable = False
    (dx,) = kreshape.ReshapeGrad({})(np.empty((0, 6)), readonly)
    np.testing.assert_array_equal(dx, readonly)


@pytest.mark.parametrize("args, error, match", [
    ((np.empty((0, 2, 3)), np.ones(5)), ValueError,
     r"reshape2_grad: Out@GRAD of shape \[5\] \(5 elements\) does not fit X's shape \[2, 3\]"),
    ((np.empty((0, 6), "float32"), np.ones(6)), TypeError,
     r"Out@GRAD is float64 but X \(XShape\) is float32"),
    ((np.empty((0, 6), "int32"), np.ones(6, "int32")), TypeError,
     r"Out@GRAD has dtype int32; supported: float32, float64"),
    ((np.empty(()), np.ones(1)), ValueError, r"XShape must be \[0\] \+ X.dims"),
    (([0, 6], np.ones(6)), TypeError, r"input 'XShape' must be a dense tensor"),
    ((np.empty((0, 6)), [1.0] * 6), TypeError, r"input 'Out@GRAD' must be a dense tensor"),
])
def test_reshape_grad_kernel_bad_inputs(args, error, match):
    with pytest.raises(error, match=match):
        kreshape.ReshapeGrad({})(*args)


def test_reshape_grad_kernel_copies_for_a_persistable_gradient():
    prog, op = build_op("reshape2_grad", {"XShape": ([0, 2, 3], "float32"),
                                          "Out@GRAD": ([6], "float32")},
                        outputs={"X@GRAD": 1}, attrs={"shape": [6]})
    prog.global_block().var("x@grad_out_0").persistable = True
    kernel = kreshape.ReshapeGrad({}, kernel_info(op))
    g = np.arange(6, dtype="float32")
    (dx,) = kernel(np.empty((0, 2, 3), "float32"), g)
    assert not np.shares_memory(dx, g)
    np.testing.assert_array_equal(dx, g.reshape(2, 3))
