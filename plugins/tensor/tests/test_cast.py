"""cast: dtype enum attributes, in_dtype consistency, shape and LoD kept."""
import pytest

from headrace import dtypes as dt
from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes

P = dt.to_proto


@pytest.mark.parametrize("src, dst", [
    ("float32", "float16"), ("float32", "int64"), ("int64", "float32"), ("bool", "float32"),
    ("float64", "bool"), ("int32", "int32"), ("uint8", "bfloat16"), ("float32", "complex64"),
])
def test_cast(src, dst):
    out = infer_shapes("cast", {"X": ([4, -1, 3], src)},
                       attrs={"in_dtype": P(src), "out_dtype": P(dst)})["Out"]
    assert out == [((4, -1, 3), dst)]


def test_cast_keeps_lod_level():
    prog, _ = build_op("cast", {"X": ([-1, 1], "int64", 2)},
                       attrs={"in_dtype": P("int64"), "out_dtype": P("float32")})
    assert prog.global_block().var("out_out_0").lod_level == 2


def test_cast_in_dtype_must_match_x():
    with pytest.raises(ShapeError, match=r"'in_dtype' does not match the dtype of input 'X' "
                                         r"\(x_0\)(.|\n)*in_dtype = 5 \(float32\)(.|\n)*"
                                         r"found:    X is int64"):
        infer_shapes("cast", {"X": ([2], "int64")}, attrs={"in_dtype": 5, "out_dtype": 6})


@pytest.mark.parametrize("attr", ["in_dtype", "out_dtype"])
@pytest.mark.parametrize("value", [100, 7, 13, -1])
def test_cast_bad_enum(attr, value):
    attrs = {"in_dtype": 5, "out_dtype": 5, attr: value}
    with pytest.raises(OpValidationError, match=rf"'{attr}' is not a valid element type; "
                                                r"valid: 0 \(bool\), 1 \(int16\)"):
        infer_shapes("cast", {"X": ([2], "float32")}, attrs=attrs)


@pytest.mark.parametrize("missing", ["in_dtype", "out_dtype"])
def test_cast_attributes_are_required(missing):
    attrs = {"in_dtype": 5, "out_dtype": 5}
    del attrs[missing]
    with pytest.raises(OpValidationError, match=rf"missing required attribute '{missing}'"):
        infer_shapes("cast", {"X": ([2], "float32")}, attrs=attrs)


def test_cast_of_an_array_is_an_error():
    with pytest.raises(ShapeError, match=r"'X' \(x_0\) is a lod_tensor_array variable"):
        infer_shapes("cast", {"X": {"type": "lod_tensor_array", "dtype": "float32"}},
                     attrs={"in_dtype": 5, "out_dtype": 6})


# == kernels ===================================================================================

import itertools  # noqa: E402

import numpy as np  # noqa: E402

from headrace.runtime import Tensor  # noqa: E402
from headrace.testing import check_op  # noqa: E402
from headrace_tensor.kernels.cpu import cast as kcast  # noqa: E402

CAST_TYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64"]


def values(name):
    """Values every cast type can hold exactly after truncation: 0..100 and fractions."""
    base = np.array([0, 1, 2, 7, 100, 0, 3, 99, 42, 5, 1, 64], dtype=np.float64)
    if name in ("float16", "float32", "float64"):
        base = base + np.array([0, 0.5, 0.25, 0.75, 0, 0, 0.5, 0.125, 0, 0.5, 0, 0])
        base[::3] *= -1
    elif name not in ("bool", "uint8"):
        base[::3] *= -1
    return base.astype(name).reshape(3, 4)


@pytest.mark.parametrize("src, dst", list(itertools.product(CAST_TYPES, CAST_TYPES)))
def test_cast_kernel_every_pair(src, dst):
    x = values(src)
    if src in ("float16", "float32", "float64") and dst in ("uint8",):
        x = np.abs(x)  # negative floats to unsigned are out of range (unspecified)
    check_op("cast", {"X": x}, {"Out": x.astype(dst)},
             attrs={"in_dtype": P(src), "out_dtype": P(dst)})


def test_cast_truncates_toward_zero_and_bool_is_nonzero():
    x = np.array([-2.75, -0.5, 0.0, 0.5, 2.75, np.nan, -0.0], "float64")
    check_op("cast", {"X": x[:5]}, {"Out": np.array([-2, 0, 0, 0, 2], "int32")},
             attrs={"in_dtype": P("float64"), "out_dtype": P("int32")})
    check_op("cast", {"X": x}, {"Out": np.array([1, 1, 0, 1, 1, 1, 0], bool)},
             attrs={"in_dtype": P("float64"), "out_dtype": P("bool")})
    check_op("cast", {"X": np.array([True, False])}, {"Out": np.array([1.0, 0.0], "float32")},
             attrs={"in_dtype": P("bool"), "out_dtype": P("float32")})


def test_cast_keeps_shape_and_lod_and_reads_strided_inputs():
    x = np.arange(24, dtype="int64").reshape(4, 6)[:, 1::2]
    check_op("cast", {"X": Tensor(x, [[0, 3, 4]])},
             {"Out": Tensor(x.astype("float64"), [[0, 3, 4]])},
             attrs={"in_dtype": P("int64"), "out_dtype": P("float64")})
    check_op("cast", {"X": np.zeros((0, 3), "float32")}, {"Out": np.zeros((0, 3), "int32")},
             attrs={"in_dtype": P("float32"), "out_dtype": P("int32")})


def test_cast_to_the_same_type_copies():
    x = np.arange(4.0)
    (out,) = kcast.Cast({"in_dtype": P("float64"), "out_dtype": P("float64")})(x)
    assert out is not x and not np.shares_memory(out, x)
    np.testing.assert_array_equal(out, x)


def test_cast_big_endian_and_read_only_inputs():
    x = np.arange(5, dtype=">f4")
    x.flags.writeable = False
    (out,) = kcast.Cast({"in_dtype": P("float32"), "out_dtype": P("int16")})(x)
    np.testing.assert_array_equal(out, np.arange(5, dtype="int16"))


@pytest.mark.parametrize("x, error, match", [
    ([1.0, 2.0], TypeError, r"cast: input 'X' must be a dense tensor"),
    (np.array([1 + 2j]), TypeError, r"cast: X has dtype complex128"),
    (np.array(["a"]), TypeError, r"cast: input 'X' has dtype <U1"),
])
def test_cast_direct_bad_inputs(x, error, match):
    with pytest.raises(error, match=match):
        kcast.Cast({"in_dtype": P("float32"), "out_dtype": P("int32")})(x)


@pytest.mark.parametrize("out", [22, 23, 99])  # bfloat16, complex64, not a type
def test_cast_direct_unsupported_out_dtype(out):
    with pytest.raises(TypeError, match=r"cast: out_dtype .* has no CPU kernel"):
        kcast.Cast({"in_dtype": P("float32"), "out_dtype": out})


# == gradients =================================================================================

import headrace  # noqa: E402
from headrace.ops.grad import GradContext  # noqa: E402
from headrace.runtime import Executor, Scope  # noqa: E402
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4)])
def test_cast_gradient_same_type(shape):
    x = np.random.default_rng(0).standard_normal(shape)
    check_grad("cast", {"X": x}, wrt=["X"],
               attrs={"in_dtype": P("float64"), "out_dtype": P("float64")})


@pytest.mark.parametrize("dst", ["float32", "float16"])
def test_cast_gradient_through_a_narrower_float(dst):
    # Out is rounded to dst: differences over a wider step, with tolerances of its precision
    x = np.random.default_rng(1).standard_normal((2, 3))
    tol = {"float32": 1e-4, "float16": 5e-2}[dst]
    check_grad("cast", {"X": x}, wrt=["X"], eps=1e-2, rtol=tol, atol=tol,
               attrs={"in_dtype": P("float64"), "out_dtype": P(dst)})


@pytest.mark.parametrize("src, dst", [("float64", "float32"), ("float32", "float64"),
                                      ("float32", "float16"), ("float64", "int64")])
def test_cast_gradient_is_a_cast_back(src, dst):
    _, op = build_op("cast", {"X": ([2, 3], src)},
                     attrs={"in_dtype": P(src), "out_dtype": P(dst)})
    (spec,) = op.opdef.grad(GradContext(op, {"x_0"}, set()))
    assert (spec.type, spec.inputs, spec.outputs) == \
        ("cast", {"X": ["out_out_0@GRAD"]}, {"Out": ["x_0@GRAD"]})
    assert spec.attrs == {"in_dtype": P(dst), "out_dtype": P(src)}


def test_cast_gradient_has_the_input_dtype():
    prog, _ = build_op("cast", {"X": {"shape": [2, 3], "dtype": "float32",
                                      "stop_gradient": False}},
                       attrs={"in_dtype": P("float32"), "out_dtype": P("float64")})
    block = prog.global_block()
    block.create_var(name="g", shape=[2, 3], dtype="float64", need_check_feed=True)
    (grad,) = headrace.gradients([block.var("out_out_0")], [block.var("x_0")],
                                 target_gradients=[block.var("g")])
    assert grad.dtype == "float32"
    g = np.random.default_rng(2).standard_normal((2, 3))
    (got,) = Executor().run(prog, feed={"x_0": np.ones((2, 3), "float32"), "g": g},
                            fetch_list=[grad], scope=Scope())
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, g.astype(np.float32))
