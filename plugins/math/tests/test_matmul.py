"""Shape/dtype inference of mul, matmul and matmul_v2."""
import re

import pytest

from headrace import ShapeError
from headrace.errors import OpValidationError

F32 = "float32"


def t(shape, dtype=F32, lod=0):
    return (shape, dtype, lod)


# -- mul ------------------------------------------------------------------------------------

@pytest.mark.parametrize("x, y, attrs, out", [
    ([2, 3], [3, 4], {}, (2, 4)),
    ([2, 3, 4], [12, 5], {}, (2, 5)),                                  # X flattened to [2, 12]
    ([2, 3, 4], [4, 5], {"x_num_col_dims": 2}, (2, 3, 5)),             # X as [6, 4]
    ([2, 3, 4], [3, 4, 5, 6], {"x_num_col_dims": 1, "y_num_col_dims": 2}, (2, 5, 6)),
    ([-1, 3, 4], [12, 5], {}, (-1, 5)),                                # unknown batch
    ([2, -1], [7, 5], {}, (2, 5)),                                     # unknown width passes
    ([2, 3], [-1, 4, 5], {"y_num_col_dims": 2}, (2, 5)),               # unknown height passes
    ([2, 3], [3, -1], {}, (2, -1)),
])
def test_mul_shapes(infer, x, y, attrs, out):
    assert infer("mul", {"X": t(x), "Y": t(y)}, attrs) == (out, F32)


def test_mul_keeps_dtype_and_lod(build):
    out = build("mul", {"X": t([-1, 8], "float64", 1), "Y": t([8, 2], "float64")})
    assert (out.shape, out.dtype, out.lod_level) == ((-1, 2), "float64", 1)


def test_mul_width_mismatch(infer):
    with pytest.raises(ShapeError, match=r"X \(x_0\)'s flattened width 12 != "
                                         r"Y \(y_0\)'s flattened height 5") as e:
        infer("mul", {"X": t([2, 3, 4]), "Y": t([5, 6])})
    assert "X[2, 3, 4] -> [2, 12]" in str(e.value)


@pytest.mark.parametrize("x, y, attrs, msg", [
    ([2, 3], [3, 4], {"x_num_col_dims": 2}, r"X \(x_0\) of rank 2 cannot be flattened at "
                                            r"x_num_col_dims=2"),
    ([2, 3], [3], {}, r"Y \(y_0\) of rank 1 cannot be flattened at y_num_col_dims=1"),
])
def test_mul_rank_too_small(infer, x, y, attrs, msg):
    with pytest.raises(ShapeError, match=msg):
        infer("mul", {"X": t(x), "Y": t(y)}, attrs)


@pytest.mark.parametrize("attr", ["x_num_col_dims", "y_num_col_dims"])
def test_mul_num_col_dims_at_least_one(infer, attr):
    with pytest.raises(OpValidationError, match=rf"'{attr}' must be >= 1 \(got 0\)"):
        infer("mul", {"X": t([2, 3]), "Y": t([3, 4])}, {attr: 0})


# -- matmul / matmul_v2 -------------------------------------------------------------------------

MATMULS = [("matmul", "transpose_X", "transpose_Y"), ("matmul_v2", "trans_x", "trans_y")]


@pytest.fixture(params=MATMULS, ids=[m[0] for m in MATMULS])
def mm(request, infer):
    """``mm(x, y, tx=False, ty=False, **kw)``: the Out (shape, dtype) of either matmul op."""
    op, tx_attr, ty_attr = request.param

    def run(x, y, tx=False, ty=False, xdtype=F32, ydtype=F32):
        return infer(op, {"X": t(x, xdtype), "Y": t(y, ydtype)}, {tx_attr: tx, ty_attr: ty})
    run.op = op
    return run


@pytest.mark.parametrize("x, y, tx, ty, out", [
    ([2, 3], [3, 4], False, False, (2, 4)),
    ([3, 2], [3, 4], True, False, (2, 4)),
    ([2, 3], [4, 3], False, True, (2, 4)),
    ([3, 2], [4, 3], True, True, (2, 4)),
    # 1-D operands follow NumPy: the added dim is dropped again; vector . vector is [1].
    ([3], [3], False, False, (1,)),
    ([3], [3, 4], False, False, (4,)),
    ([2, 3], [3], False, False, (2,)),
    ([5, 2, 3], [3], False, False, (5, 2)),
    ([3], [5, 3, 4], False, False, (5, 4)),
    ([3], [4, 3], False, True, (4,)),
    ([3], [3, 4], True, False, (4,)),                 # a vector's transpose flag is ignored
    ([2, 3], [3], False, True, (2,)),
    # batch dims broadcast
    ([2, 3, 4], [4, 5], False, False, (2, 3, 5)),
    ([4, 5], [2, 5, 6], False, False, (2, 4, 6)),
    ([7, 1, 2, 3], [5, 3, 4], False, False, (7, 5, 2, 4)),
    ([6, 2, 3], [6, 4, 3], False, True, (6, 2, 4)),
    # unknown dims
    ([-1, 2, 3], [3, 4], False, False, (-1, 2, 4)),
    ([2, -1], [5, 4], False, False, (2, 4)),
    ([-1, 3], [3, -1], False, False, (-1, -1)),
    ([-1, 2, 3], [4, 3, 5], False, False, (4, 2, 5)),
    ([-1, 2, 3], [1, 3, 5], False, False, (-1, 2, 5)),
    ([-1], [-1], False, False, (1,)),
])
def test_matmul_shapes(mm, x, y, tx, ty, out):
    assert mm(x, y, tx, ty) == (out, F32)


def test_matmul_dtype(mm):
    assert mm([2, 3], [3, 4], xdtype="float16", ydtype="float16") == ((2, 4), "float16")


@pytest.mark.parametrize("x, y, tx, ty, found", [
    ([2, 3], [4, 5], False, False, "3 != Y (y_0)'s contraction dim 4"),
    ([2, 3], [3, 4], True, False, "2 != Y (y_0)'s contraction dim 3"),
    ([2, 3], [3, 4], False, True, "3 != Y (y_0)'s contraction dim 4"),
    ([3], [4], False, False, "3 != Y (y_0)'s contraction dim 4"),
    ([5, 2, 3], [2], False, False, "3 != Y (y_0)'s contraction dim 2"),
])
def test_matmul_contraction_mismatch(mm, x, y, tx, ty, found):
    with pytest.raises(ShapeError, match=re.escape("X (x_0)'s contraction dim " + found)):
        mm(x, y, tx, ty)


def test_matmul_batch_mismatch(mm):
    with pytest.raises(ShapeError, match=r"X \(x_0\) batch dims and Y \(y_0\) batch dims "
                                         r"cannot be broadcast") as e:
        mm([2, 2, 3], [3, 3, 4])
    assert "equal dims or 1" in str(e.value)


@pytest.mark.parametrize("x, y, slot", [([], [3], "X"), ([3], [], "Y")])
def test_matmul_rejects_0d(mm, x, y, slot):
    with pytest.raises(ShapeError, match=rf"{slot} \({slot.lower()}_0\) is a 0-D tensor"):
        mm(x, y)


def test_matmul_dtype_mismatch(mm):
    with pytest.raises(ShapeError, match=r"X \(x_0\) is float32 but Y \(y_0\) is float64"):
        mm([2, 3], [3, 4], ydtype="float64")


@pytest.mark.parametrize("op", ["mul", "matmul", "matmul_v2"])
def test_products_reject_integers(infer, op):
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        infer(op, {"X": t([2, 3], "int64"), "Y": t([3, 4], "int64")})


def test_matmul_alpha_and_defaults(math_registry, infer):
    assert infer("matmul", {"X": t([2, 3]), "Y": t([3, 4])}, {"alpha": 0.5}) == ((2, 4), F32)
    defaults = {op: {a.name: a.default for a in math_registry.get(op).attrs.values()}
                for op in ("mul", "matmul", "matmul_v2")}
    assert defaults == {
        "mul": {"x_num_col_dims": 1, "y_num_col_dims": 1},
        "matmul": {"transpose_X": False, "transpose_Y": False, "alpha": 1.0},
        "matmul_v2": {"trans_x": False, "trans_y": False},
    }


def test_matmul_v2_has_no_alpha(infer):
    with pytest.raises(OpValidationError, match="unknown attribute 'alpha'"):
        infer("matmul_v2", {"X": t([2, 3]), "Y": t([3, 4])}, {"alpha": 2.0})


def test_run_time_inference(math_registry):
    # The same rules run at run time on real shapes, through a context over plain dicts.
    from headrace.ops import DictInferContext, VarMeta
    x = VarMeta("x", (4, 3, 2), "float32", 1, "lod_tensor")
    y = VarMeta("y", (6, 5), "float32", 0, "lod_tensor")
    ctx = DictInferContext("mul", {"X": [x], "Y": [y]}, {"Out": ["out"]},
                           {"x_num_col_dims": 1, "y_num_col_dims": 1}, runtime=True)
    math_registry.get("mul").infer(ctx)
    assert ctx.results == {"Out": {0: VarMeta("out", (4, 5), "float32", 1, "lod_tensor")}}
    bad = DictInferContext("mul", {"X": [x], "Y": [y]}, {"Out": ["out"]},
                           {"x_num_col_dims": 2, "y_num_col_dims": 1}, runtime=True)
    with pytest.raises(ShapeError, match=r"op 'mul': X \(x\)'s flattened width 2 != "
                                         r"Y \(y\)'s flattened height 6"):
        math_registry.get("mul").infer(bad)
    assert bad.results == {}
