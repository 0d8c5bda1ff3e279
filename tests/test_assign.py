"""assign: a copy keeps kind, shape, dtype and LoD level."""
import pytest

from headrace.errors import OpError, OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


@pytest.mark.parametrize("spec", [
    ([2, 3], "float32"),
    ([-1, 7], "int64", 2),
    ([], "bool"),
    {"shape": [-1, 5], "dtype": "float32", "lod_level": 1, "type": "lod_tensor_array"},
    {"shape": [10, 4], "dtype": "float32", "type": "selected_rows"},
])
def test_assign_copies_the_description(spec):
    prog, op = build_op("assign", {"X": spec})
    x, out = (prog.global_block().var(n) for n in ("x_0", "out_out_0"))
    assert (out.kind, out.shape, out.dtype, out.lod_level) == \
        (x.kind, x.shape, x.dtype, x.lod_level)


def test_assign_into_a_declared_variable_updates_it():
    prog, _ = build_op("assign", {"X": ([3, 4], "int32")})
    block = prog.global_block()
    y = block.create_var(name="y", shape=[-1, -1], dtype="int32")
    block.append_op("assign", {"X": "x_0"}, {"Out": "y"})
    assert (y.shape, y.dtype) == ((3, 4), "int32")


def test_assign_into_a_variable_of_another_kind():
    prog, _ = build_op("assign", {"X": ([2], "float32")})
    block = prog.global_block()
    block.create_var(name="arr", type="lod_tensor_array", dtype="float32")
    with pytest.raises(OpError, match=r"output 'Out' \(arr\) is a lod_tensor_array variable"):
        block.append_op("assign", {"X": "x_0"}, {"Out": "arr"})


@pytest.mark.parametrize("kind", ["step_scopes", "feed_minibatch", "fetch_list"])
def test_assign_of_a_non_tensor(kind):
    with pytest.raises(ShapeError, match=rf"input 'X' \(x_0\) is a {kind} variable"):
        infer_shapes("assign", {"X": {"type": kind}})


def test_assign_takes_one_input():
    with pytest.raises(OpValidationError, match=r"input slot 'X' takes one variable"):
        infer_shapes("assign", {"X": [([1], "float32"), ([1], "float32")]})


# == kernels ===================================================================================

import numpy as np  # noqa: E402

import headrace  # noqa: E402
from headrace.runtime import Executor, Scope, Tensor, TensorArray  # noqa: E402
from headrace.testing import check_op  # noqa: E402
from headrace.core_ops.kernels.cpu import assign as kassign  # noqa: E402

NUMPY_TYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
               "float64", "complex64", "complex128"]


@pytest.mark.parametrize("name", NUMPY_TYPES)
def test_assign_kernel_dtypes(name):
    x = (np.arange(12) % 5).astype(name).reshape(3, 4)
    check_op("assign", {"X": x}, {"Out": x.copy()})


def test_assign_keeps_lod_and_reads_strided_inputs():
    x = np.arange(24.0).reshape(4, 6)[:, ::3]
    check_op("assign", {"X": Tensor(x, [[0, 1, 4]])}, {"Out": Tensor(x.copy(), [[0, 1, 4]])})


def test_assign_copies():
    x = np.arange(6.0).reshape(2, 3)
    (out,) = kassign.Assign({})(x)
    assert out is not x and not np.shares_memory(out, x)
    np.testing.assert_array_equal(out, x)
    ro = x.copy()
    ro.flags.writeable = False
    (out,) = kassign.Assign({})(ro)
    assert out.flags.writeable and out.flags.c_contiguous


def test_assign_tensor_array():
    arr = TensorArray([Tensor(np.ones((2, 2), "float32"), [[0, 2]]), None,
                       Tensor(np.arange(3))])
    (out,) = kassign.Assign({})(arr)
    assert isinstance(out, TensorArray) and len(out) == 3 and out[1] is None
    assert out[0].data is not arr[0].data and out[0].lod == [[0, 2]]
    assert out[0].lod is not arr[0].lod
    np.testing.assert_array_equal(out[2].data, np.arange(3))


@pytest.mark.parametrize("x, error, match", [
    ("text", TypeError, r"assign: X must be a tensor or a tensor array, got str"),
    (np.array([object()]), TypeError, r"assign: input 'X' has dtype object"),
    (TensorArray([Tensor([1, 2])]), TypeError, r"got list"),
])
def test_assign_direct_bad_inputs(x, error, match):
    with pytest.raises(error, match=match):
        kassign.Assign({})(x)


def test_assign_into_a_parameter_then_updated_in_place_leaves_the_source():
    """assign always copies: an in-place update of Out must not write through into X."""
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="src", shape=[3], dtype="float32")
    for name in ("w", "lr"):
        block.create_var(name=name, shape=[3] if name == "w" else [1], dtype="float32",
                         persistable=True)
    block.append_op("assign", {"X": "src"}, {"Out": "w"})
    if "sgd" not in block.program.registry:
        pytest.skip("the optim plugin is not installed")
    block.append_op("sgd", {"Param": "w", "Grad": "src", "LearningRate": "lr"},
                    {"ParamOut": "w"})
    src = np.array([1.0, 2.0, 3.0], "float32")
    scope = Scope()
    scope.set("lr", Tensor(np.array([0.5], "float32")))
    (w,) = Executor().run(prog, feed={"src": src}, fetch_list=["w"], scope=scope)
    np.testing.assert_array_equal(src, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(w, src * 0.5)


# == gradients =================================================================================

from headrace.ops.grad import GradContext  # noqa: E402
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4), (1, 2, 1, 3)])
def test_assign_gradient(shape):
    x = np.random.default_rng(0).standard_normal(shape)
    check_grad("assign", {"X": x}, wrt=["X"])


def test_assign_gradient_keeps_lod_inputs():
    x = np.random.default_rng(1).standard_normal((4, 2))
    check_grad("assign", {"X": Tensor(x, [[0, 1, 4]])}, wrt=["X"])


def test_assign_gradient_is_an_assign():
    _, op = build_op("assign", {"X": ([2, 3], "float32")})
    (spec,) = op.opdef.grad(GradContext(op, {"x_0"}, set()))
    assert (spec.type, spec.inputs, spec.outputs, spec.attrs) == \
        ("assign", {"X": ["out_out_0@GRAD"]}, {"Out": ["x_0@GRAD"]}, {})


def test_assign_gradient_to_a_parameter():
    prog = headrace.Program()
    block = prog.global_block()
    w = block.create_parameter("w", [2, 3], dtype="float64")
    block.append_op("assign", {"X": "w"}, {"Out": "copy"})
    block.append_op("split", {"X": "copy"}, {"Out": ["a", "b"]}, {"axis": 1, "sections": [1, 2]})
    block.append_op("reshape2", {"X": "a"}, {"Out": "loss"}, {"shape": [2]})
    block.append_op("split", {"X": "loss"}, {"Out": ["l0", "l1"]}, {"num": 2})
    ((param, grad),) = headrace.append_backward(block.var("l1"))
    assert param is w and grad.name == "w@GRAD"
    scope = Scope()
    scope.set("w", Tensor(np.arange(6.0).reshape(2, 3)))
    (got,) = Executor().run(prog, fetch_list=[grad], scope=scope)
    np.testing.assert_array_equal(got, [[0, 0, 0], [1, 0, 0]])
