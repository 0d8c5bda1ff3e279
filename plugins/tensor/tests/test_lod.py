"""lod_reset: where the new LoD comes from, its level count, target_lod checks."""
import pytest

from headrace.errors import ShapeError
from headrace.testing import build_op


def lod_reset(x, attrs=None, y=None):
    inputs = {"X": x} if y is None else {"X": x, "Y": y}
    prog, _ = build_op("lod_reset", inputs, attrs=attrs)
    out = prog.global_block().var("out_out_0")
    return out.shape, out.dtype, out.lod_level


@pytest.mark.parametrize("x, attrs, y, lod_level", [
    (([6, 3], "float32"), {"target_lod": [0, 2, 6]}, None, 1),
    (([6, 3], "float32", 2), {"target_lod": [0, 2, 6]}, None, 1),
    (([6, 3], "float32", 1), {"target_lod": [0, 1, 6], "append": True}, None, 2),
    (([6, 3], "float32"), {"target_lod": [0, 6], "append": True}, None, 1),
    (([6, 3], "float32"), None, ([-1, 1], "float32", 3), 3),  # Y's LoD
    (([6, 3], "float32", 1), {"append": True}, ([-1, 1], "float32", 2), 2),
    (([6, 3], "float32"), None, ([3], "int32"), 1),  # Y's data as offsets
    (([6, 3], "float32", 1), {"append": True}, ([3], "int64"), 2),
])
def test_lod_reset_levels(x, attrs, y, lod_level):
    assert lod_reset(x, attrs, y) == ((6, 3), "float32", lod_level)


def test_lod_reset_unknown_rows_skip_the_end_check():
    assert lod_reset(([-1, 4], "int64"), {"target_lod": [0, 3, 5]}) == ((-1, 4), "int64", 1)


@pytest.mark.parametrize("target, match", [
    ([], r"must come from attribute 'target_lod'"),
    ([1, 6], r"must be offsets: start at 0"),
    ([0, 4, 2, 6], r"must be offsets(.|\n)*found:    target_lod=\[0, 4, 2, 6\]"),
    ([0, 2, 5], r"must end at the number of rows of input 'X' \(x_0\)(.|\n)*last offset 6"),
])
def test_lod_reset_target_lod_errors(target, match):
    with pytest.raises(ShapeError, match=match):
        lod_reset(([6, 3], "float32"), {"target_lod": target})


def test_lod_reset_offsets_from_y_must_be_ints():
    with pytest.raises(ShapeError, match=r"'Y' \(y_0\) has no LoD, so its data must be the "
                                         r"offsets(.|\n)*found:    float32"):
        lod_reset(([6, 3], "float32"), None, ([3], "float32"))


# == kernels ===================================================================================

import numpy as np  # noqa: E402

import headrace  # noqa: E402
from headrace.errors import OpError  # noqa: E402
from headrace.runtime import Executor, Scope, Tensor, TensorArray  # noqa: E402
from headrace.runtime.kernel_info import kernel_info  # noqa: E402
from headrace.testing import check_op, run_op  # noqa: E402
from headrace_tensor.kernels.cpu import lod as klod  # noqa: E402

X = np.arange(18.0).reshape(6, 3)


@pytest.mark.parametrize("x, y, attrs, lod", [
    (X, None, {"target_lod": [0, 2, 6]}, [[0, 2, 6]]),
    (Tensor(X, [[0, 1, 2], [0, 4, 6]]), None, {"target_lod": [0, 0, 6]}, [[0, 0, 6]]),
    (Tensor(X, [[0, 2, 6]]), None, {"target_lod": [0, 1, 1, 3, 4, 5, 6], "append": True},
     [[0, 2, 6], [0, 1, 1, 3, 4, 5, 6]]),
    (X, None, {"target_lod": [0, 6], "append": True}, [[0, 6]]),
    # Y's LoD replaces X's, append or not
    (Tensor(X, [[0, 6]]), Tensor(np.zeros((6, 1), "float32"), [[0, 1, 3], [0, 3, 5, 6]]),
     {"append": True}, [[0, 1, 3], [0, 3, 5, 6]]),
    # Y's data as the offsets
    (Tensor(X, [[0, 3, 6]]), np.array([0, 1, 5, 6], "int32"), {}, [[0, 1, 5, 6]]),
    (Tensor(X, [[0, 2, 6]]), np.array([0, 1, 1, 3, 4, 5, 6], "int64"), {"append": True},
     [[0, 2, 6], [0, 1, 1, 3, 4, 5, 6]]),
])
def test_lod_reset_kernel(x, y, attrs, lod):
    inputs = {"X": x} if y is None else {"X": x, "Y": y}
    check_op("lod_reset", inputs, {"Out": Tensor(X.copy(), lod)}, attrs=attrs)


@pytest.mark.parametrize("name", ["bool", "int32", "int64", "float16", "float32"])
def test_lod_reset_kernel_dtypes(name):
    x = (np.arange(8) % 2).astype(name).reshape(4, 2)
    check_op("lod_reset", {"X": x}, {"Out": Tensor(x, [[0, 3, 4]])},
             attrs={"target_lod": [0, 3, 4]})


def test_lod_reset_new_lod_reaches_the_next_op():
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="x", shape=[6, 3], dtype="float64", lod_level=1)
    block.append_op("lod_reset", {"X": "x"}, {"Out": "y"}, {"target_lod": [0, 4, 6]})
    block.append_op("assign", {"X": "y"}, {"Out": "z"})
    (z,) = Executor().run(prog, feed={"x": Tensor(X, [[0, 3, 6]])}, fetch_list=["z"],
                          scope=Scope(), return_numpy=False)
    assert z.lod == [[0, 4, 6]]
    np.testing.assert_array_equal(z.numpy(), X)


@pytest.mark.parametrize("y, attrs, match", [
    (np.array([0, 2, 5], "int32"), {}, r"LoD level 0 ends at 5, expected 6"),
    (np.array([1, 6], "int64"), {}, r"LoD level 0 must start at offset 0"),
    (np.array([0, 4, 2, 6], "int32"), {}, r"offsets must not decrease"),
    (np.array([0, 6], "int32"), {"append": True}, r"LoD level 0 ends at 6, expected 1"),
])
def test_lod_reset_bad_new_lod_at_run_time(y, attrs, match):
    with pytest.raises(OpError, match=match):
        run_op("lod_reset", {"X": Tensor(X, [[0, 2, 6]]), "Y": y}, attrs=attrs)


def test_lod_reset_is_a_lod_kernel():
    from headrace.ops import default_registry
    assert default_registry().kernel("lod_reset", "cpu", "float64").kind == "lod"
    kernel = klod.LodReset({"target_lod": [0, 2, 6], "append": False})
    (out,) = kernel(Tensor(X, [[0, 6]]), None)
    assert isinstance(out, Tensor) and out.lod == [[0, 2, 6]]
    assert out.data is X  # same data: a view, not a copy
    (out,) = klod.LodReset({"target_lod": [], "append": False})(
        Tensor(X), Tensor(np.array([0, 6]), []))
    assert out.lod == [[0, 6]]


def test_lod_reset_persistable_copies():
    prog, op = build_op("lod_reset", {"X": ([6, 3], "float64")}, attrs={"target_lod": [0, 6]})
    prog.global_block().var("x_0").persistable = True
    info = kernel_info(op)
    (out,) = klod.LodReset({"target_lod": [0, 6]}, info)(Tensor(X), None)
    assert not np.shares_memory(out.data, X)
    np.testing.assert_array_equal(out.data, X)


@pytest.mark.parametrize("x, y, attrs, error, match", [
    (Tensor(X), None, {"target_lod": []}, ValueError, r"new LoD level from target_lod is "
                                                      r"empty"),
    (Tensor(X), None, {"target_lod": [0, 7]}, ValueError, r"ends at 7, expected 6"),
    (Tensor(X), Tensor(np.array([0.0, 6.0])), {}, TypeError, r"'Y' must hold integers"),
    (Tensor(X), Tensor(np.zeros((0,), "int64")), {}, ValueError, r"from Y's data is empty"),
    (TensorArray([Tensor(X)]), None, {"target_lod": [0, 6]}, TypeError,
     r"X must be a dense tensor, got TensorArray"),
    (Tensor(np.array([object()] * 6)), None, {"target_lod": [0, 6]}, TypeError,
     r"dtype object"),
])
def test_lod_reset_direct_bad_inputs(x, y, attrs, error, match):
    with pytest.raises(error, match=match):
        klod.LodReset({"append": False, **attrs})(x, y)


# == gradients =================================================================================

from headrace.ops.grad import GradContext  # noqa: E402
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("x, y, attrs", [
    (X, None, {"target_lod": [0, 2, 6]}),
    (Tensor(X, [[0, 1, 2], [0, 4, 6]]), None, {"target_lod": [0, 0, 6]}),
    (Tensor(X, [[0, 2, 6]]), None, {"target_lod": [0, 1, 1, 3, 4, 5, 6], "append": True}),
    (X, Tensor(np.zeros((6, 1)), [[0, 3, 6]]), {}),            # Y's LoD
    (X, np.array([0, 1, 6], "int32"), {}),                     # Y's data as offsets
])
def test_lod_reset_gradient(x, y, attrs):
    x = Tensor(np.random.default_rng(0).standard_normal((6, 3)),
               x.lod if isinstance(x, Tensor) else [])
    inputs = {"X": x} if y is None else {"X": x, "Y": y}
    check_grad("lod_reset", inputs, wrt=["X"], attrs=attrs)


def test_lod_reset_gradient_passes_through_to_x_only():
    _, op = build_op("lod_reset", {"X": ([6, 3], "float32"), "Y": ([-1, 1], "float32", 1)})
    (spec,) = op.opdef.grad(GradContext(op, {"x_0", "y_0"}, set()))
    assert (spec.type, spec.inputs, spec.outputs) == \
        ("assign", {"X": ["out_out_0@GRAD"]}, {"Out": ["x_0@GRAD"]})
    assert op.opdef.grad(GradContext(op, {"y_0"}, set())) == []
