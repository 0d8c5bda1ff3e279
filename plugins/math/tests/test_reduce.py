"""Shape/dtype inference of mean, reduce_sum/_mean/_max/_min/_prod and reduce_all/_any."""
import pytest

from headrace import ShapeError, dtypes
from headrace.errors import OpValidationError
from headrace_math.ops.reduce import REDUCTIONS

NUMERIC = sorted(REDUCTIONS)
LOGICAL = ["reduce_all", "reduce_any"]


def reduce_case(op):
    """(op, dtype of X) pairs: numeric reductions on float32, logical ones on bool."""
    return (op, "bool" if op in LOGICAL else "float32")


ALL = [reduce_case(op) for op in NUMERIC + LOGICAL]


@pytest.mark.parametrize("op, dtype", ALL)
@pytest.mark.parametrize("x, attrs, out", [
    ([2, 3, 4], {}, (3, 4)),                                           # dim defaults to [0]
    ([2, 3, 4], {"dim": [1]}, (2, 4)),
    ([2, 3, 4], {"dim": [1], "keep_dim": True}, (2, 1, 4)),
    ([2, 3, 4], {"dim": [-1]}, (2, 3)),
    ([2, 3, 4], {"dim": [-1, 0]}, (3,)),
    ([2, 3, 4], {"dim": [2, 0], "keep_dim": True}, (1, 3, 1)),
    ([2, 3, 4], {"reduce_all": True}, (1,)),
    ([2, 3, 4], {"reduce_all": True, "keep_dim": True}, (1, 1, 1)),
    ([2, 3, 4], {"reduce_all": True, "dim": [1]}, (1,)),             # dim is ignored
    ([2, 3, 4], {"dim": [0, 1, 2]}, (1,)),                           # all dims: Fluid's [1]
    ([2, 3, 4], {"dim": [-3, -2, -1], "keep_dim": True}, (1, 1, 1)),
    ([2, 3, 4], {"dim": []}, (1,)),                                  # Paddle 2: [] = all
    ([5], {}, (1,)),
    ([5], {"keep_dim": True}, (1,)),
    ([], {}, (1,)),                                                  # a 0-D X is reduced whole
    ([], {"keep_dim": True}, ()),
    # unknown dims
    ([-1, 3, 4], {"dim": [1]}, (-1, 4)),
    ([-1, 3, 4], {"dim": [0]}, (3, 4)),
    ([-1, -1], {"dim": [-1], "keep_dim": True}, (-1, 1)),
    ([-1, 3], {"reduce_all": True}, (1,)),
])
def test_shapes(infer, op, dtype, x, attrs, out):
    assert infer(op, {"X": (x, dtype)}, attrs)[0] == out


@pytest.mark.parametrize("op, dtype", ALL)
@pytest.mark.parametrize("dim, msg", [
    ([3], r"attribute 'dim' entry 3 is out of range for X \(x_0\) of rank 3"
          r"(.|\n)*expected: dims in \[-3, 2\](.|\n)*found:    dim=\[3\], X\[2, 3, 4\]"),
    ([0, -4], r"attribute 'dim' entry -4 is out of range for X \(x_0\) of rank 3"),
    ([1, 1], r"attribute 'dim' names dimension 1 of X \(x_0\) twice \(as 1 and 1\)"),
    ([0, -2, 1], r"attribute 'dim' names dimension 1 of X \(x_0\) twice \(as -2 and 1\)"),
])
def test_bad_dims(infer, op, dtype, dim, msg):
    with pytest.raises(ShapeError, match=msg):
        infer(op, {"X": ([2, 3, 4], dtype)}, {"dim": dim})


@pytest.mark.parametrize("op", NUMERIC)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_numeric_keeps_dtype(infer, op, dtype):
    assert infer(op, {"X": ([2, 3], dtype)}) == ((3,), dtype)


@pytest.mark.parametrize("op", NUMERIC)
def test_out_dtype(infer, op):
    attrs = {"out_dtype": dtypes.to_proto("float64"), "in_dtype": dtypes.to_proto("float64")}
    assert infer(op, {"X": ([2, 3], "float32")}, attrs) == ((3,), "float64")


def test_reduce_sum_of_bool_to_int64(infer):
    attrs = {"reduce_all": True, "out_dtype": dtypes.to_proto("int64")}
    assert infer("reduce_sum", {"X": ([2, 3], "bool")}, attrs) == ((1,), "int64")


@pytest.mark.parametrize("op", NUMERIC)
@pytest.mark.parametrize("attr", ["in_dtype", "out_dtype"])
def test_bad_dtype_code(infer, op, attr):
    with pytest.raises(OpValidationError, match=rf"'{attr}' must be -1 or a VarType dtype code"):
        infer(op, {"X": ([2, 3], "float32")}, {attr: 1234})


@pytest.mark.parametrize("op", ["reduce_mean", "reduce_max", "reduce_min", "reduce_prod"])
def test_numeric_rejects_bool(infer, op):
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        infer(op, {"X": ([2, 3], "bool")})


@pytest.mark.parametrize("op", LOGICAL)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_logical_needs_bool(infer, op, dtype):
    with pytest.raises(OpValidationError, match=r"(.|\n)*expected: bool(.|\n)*found:    " + dtype):
        infer(op, {"X": ([2, 3], dtype)})


@pytest.mark.parametrize("op", LOGICAL)
def test_logical_gives_bool_without_gradient(math_registry, infer, op):
    assert infer(op, {"X": ([2, 3], "bool")}, {"dim": [1]}) == ((2,), "bool")
    assert not math_registry.get(op).differentiable
    assert "out_dtype" not in math_registry.get(op).attrs


@pytest.mark.parametrize("op, dtype", ALL)
@pytest.mark.parametrize("attrs, lod", [
    ({"dim": [1]}, 1),                 # rows survive: the LoD still describes them
    ({"dim": [-1]}, 1),
    ({"dim": [0]}, 0),
    ({"dim": [1, 0]}, 0),
    ({"reduce_all": True}, 0),
])
def test_lod(build, op, dtype, attrs, lod):
    assert build(op, {"X": ([-1, 3], dtype, 1)}, attrs).lod_level == lod


@pytest.mark.parametrize("op", NUMERIC + LOGICAL)
def test_defaults(math_registry, op):
    attrs = math_registry.get(op).attrs
    assert (attrs["dim"].default, attrs["keep_dim"].default, attrs["reduce_all"].default) \
        == ([0], False, False)
    assert attrs["dim"].type == "ints"


# -- mean -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [[2, 3], [-1, 3], [7], [], [-1]])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_mean(build, shape, dtype):
    out = build("mean", {"X": (shape, dtype, 1)})
    assert (out.shape, out.dtype, out.lod_level) == ((1,), dtype, 0)


def test_mean_rejects_integers(infer):
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        infer("mean", {"X": ([2], "int64")})


def test_mean_has_no_attributes(infer):
    with pytest.raises(OpValidationError, match="unknown attribute 'dim'"):
        infer("mean", {"X": ([2], "float32")}, {"dim": [0]})
