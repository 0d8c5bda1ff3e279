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
    # 1-D operands follow NumPy: the added dim is dropped again; vector . vector is 0-D
    # (Paddle 3; the Fluid op set wrote [1]).
    ([3], [3], False, False, ()),
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
    ([-1], [-1], False, False, ()),
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


# -- kernels --------------------------------------------------------------------------------

import numpy as np  # noqa: E402

from headrace_math.kernels.cpu.matmul import Matmul, Mul  # noqa: E402
from headrace_math.reference.matmul import REFERENCES  # noqa: E402

FLOATS = ["float32", "float64"]


def _stored(shape, trans):
    """The stored shape of an operand whose (transposed) logical shape is ``shape``."""
    shape = list(shape)
    if trans and len(shape) > 1:
        shape[-1], shape[-2] = shape[-2], shape[-1]
    return tuple(shape)


# (X logical shape, Y logical shape): NumPy matmul shapes before the transposes.
PRODUCTS = [
    ((2, 3), (3, 4)), ((1, 3), (3, 1)), ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)),
    ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((2, 3, 4), (4, 5)), ((4, 5), (2, 5, 6)),
    ((7, 1, 2, 3), (5, 3, 4)), ((6, 2, 3), (6, 3, 4)), ((1, 2, 3), (6, 3, 4)),
    ((2, 1, 4, 3), (1, 5, 3, 2)), ((0, 2, 3), (3, 4)), ((2, 0), (0, 3)), ((2, 3), (3, 0)),
    ((3, 0, 4), (4, 2)), ((1, 1), (1, 1)), ((16, 33), (33, 17)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("xs, ys", PRODUCTS)
@pytest.mark.parametrize("tx, ty", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("op", ["matmul", "matmul_v2"])
def test_matmul_kernel(check, op, dtype, xs, ys, tx, ty):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(_stored(xs, tx)).astype(dtype)
    y = rng.standard_normal(_stored(ys, ty)).astype(dtype)
    attrs = ({"transpose_X": tx, "transpose_Y": ty, "alpha": 0.75} if op == "matmul"
             else {"trans_x": tx, "trans_y": ty})
    check(op, {"X": x, "Y": y}, attrs)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("xs, ys, attrs", [
    ((2, 3), (3, 4), {}), ((2, 3, 4), (12, 5), {}), ((2, 3, 4), (4, 5), {"x_num_col_dims": 2}),
    ((2, 3, 4), (3, 4, 5, 6), {"y_num_col_dims": 2}), ((0, 3), (3, 4), {}),
    ((2, 0), (0, 4), {}), ((2, 3), (3, 0), {}),
])
def test_mul_kernel(check, dtype, xs, ys, attrs):
    rng = np.random.default_rng(1)
    check("mul", {"X": rng.standard_normal(xs).astype(dtype),
                  "Y": rng.standard_normal(ys).astype(dtype)}, attrs)


def _views(a):
    """Same values, layouts BLAS can read in place (or not): C, Fortran, strided rows,
    strided batch, transposed batch, negative strides, read-only, big-endian."""
    out = [("c", a), ("fortran", np.asfortranarray(a))]
    if a.ndim >= 1:
        out.append(("strided", np.repeat(a, 2, axis=-1)[..., ::2]))
        out.append(("reversed", np.flip(np.flip(a, -1).copy(), -1)))
    if a.ndim >= 2:
        pad = np.zeros(a.shape[:-1] + (a.shape[-1] + 3,), a.dtype)
        pad[..., :a.shape[-1]] = a
        out.append(("padded rows", pad[..., :a.shape[-1]]))       # ld > cols: no copy
    if a.ndim >= 3:
        out.append(("batch-last", np.moveaxis(np.moveaxis(a, 0, -1).copy(), -1, 0)))
        out.append(("strided batch", np.repeat(a, 2, axis=0)[::2]))
    ro = a.copy()
    ro.flags.writeable = False
    out += [("readonly", ro), ("bigendian", a.astype(a.dtype.newbyteorder(">")))]
    return out


@pytest.mark.parametrize("xs, ys", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                                    ((2, 3, 4), (4, 5)), ((4,), (3, 4, 2)), ((2, 3, 4), (4,)),
                                    ((1, 4), (4, 1))])
@pytest.mark.parametrize("tx, ty", [(False, False), (True, True), (True, False)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_odd_layouts_directly(xs, ys, tx, ty, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(_stored(xs, tx)).astype(dtype)
    y = rng.standard_normal(_stored(ys, ty)).astype(dtype)
    attrs = {"transpose_X": tx, "transpose_Y": ty, "alpha": 2.0}
    expected = REFERENCES["matmul"]({"X": x, "Y": y}, attrs)["Out"]
    kernel = Matmul("matmul", tx, ty, 2.0)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for (lx, vx) in _views(x):
        for (ly, vy) in _views(y):
            (out,) = kernel(vx, vy)
            assert out.dtype == np.dtype(dtype) and out.flags.c_contiguous
            np.testing.assert_allclose(out, expected, rtol=tol, atol=tol,
                                       err_msg=f"X {lx}, Y {ly}")


def test_matmul_leaves_inputs_alone():
    x, y = np.arange(12.0).reshape(3, 4), np.arange(8.0).reshape(4, 2)
    xc, yc = x.copy(), y.copy()
    Matmul("matmul", False, False, 1.0)(np.asfortranarray(x), y[:, ::1])
    np.testing.assert_array_equal(x, xc)
    np.testing.assert_array_equal(y, yc)


def test_mul_odd_layouts_directly():
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    y = np.random.default_rng(4).standard_normal((4, 5))
    expected = REFERENCES["mul"]({"X": x, "Y": y}, {"x_num_col_dims": 2})["Out"]
    kernel = Mul({"x_num_col_dims": 2, "y_num_col_dims": 1})
    for (lx, vx), (ly, vy) in zip(_views(x), _views(y)):
        np.testing.assert_allclose(kernel(vx, vy)[0], expected, rtol=1e-12,
                                   err_msg=f"X {lx}, Y {ly}")


@pytest.mark.parametrize("xs, ys, tx, ty, msg", [
    ((2, 3), (4, 5), False, False, r"contraction dims 3 != 4"),
    ((2, 3), (2, 3), False, False, r"contraction dims 3 != 2"),
    ((3,), (4,), False, False, r"contraction dims 3 != 4"),
    ((2, 2, 3), (3, 3, 4), False, False, r"batch dims .* cannot be broadcast"),
    ((), (3,), False, False, r"must have rank >= 1"),
    ((3, 2), (3, 4), False, False, r"contraction dims 2 != 3"),
])
def test_matmul_kernel_rejects_mismatches(xs, ys, tx, ty, msg):
    with pytest.raises(ValueError, match=r"matmul_v2: .*" + msg):
        Matmul("matmul_v2", tx, ty, 1.0)(np.ones(xs), np.ones(ys))


@pytest.mark.parametrize("x, y", [
    (np.ones((2, 2), np.float32), np.ones((2, 2))),
    (np.ones((2, 2), np.int64), np.ones((2, 2), np.int64)),
    (np.ones((2, 2), np.float16), np.ones((2, 2), np.float16)),
    (np.array([["a"]]), np.array([["b"]])),
])
@pytest.mark.parametrize("kernel", [Matmul("matmul", False, False, 1.0),
                                    Mul({"x_num_col_dims": 1, "y_num_col_dims": 1})])
def test_products_reject_bad_dtypes_directly(kernel, x, y):
    with pytest.raises(TypeError, match=r"must both be float32 or float64"):
        kernel(x, y)


@pytest.mark.parametrize("xs, ys, attrs, msg", [
    ((2, 3), (4, 5), {}, r"flattens to \[2, 3\] but Y\[4, 5\] flattens to \[4, 5\]"),
    ((6,), (6, 2), {}, r"x_num_col_dims=1 / y_num_col_dims=1 do not fit X\[6\]"),
    ((2, 3), (3, 4), {"x_num_col_dims": 2}, r"do not fit"),
])
def test_mul_kernel_rejects_mismatches(xs, ys, attrs, msg):
    full = {"x_num_col_dims": 1, "y_num_col_dims": 1, **attrs}
    with pytest.raises(ValueError, match=r"mul: .*" + msg):
        Mul(full)(np.ones(xs), np.ones(ys))


@pytest.mark.parametrize("view", ["fortran", "padded rows", "strided batch", "transposed"])
def test_matmul_reads_blas_layouts_in_place(view):
    # NumPy reports its buffers to tracemalloc: only Out (and no copy of X) may be allocated.
    import tracemalloc
    x = np.random.default_rng(5).standard_normal((4, 64, 64))
    if view == "fortran":      # a 2-D one: a 3-D Fortran array has no BLAS-readable matrices
        x = x[0]
        vx = np.asfortranarray(x)
    elif view == "padded rows":
        vx = np.zeros((4, 64, 80))[..., :64]
        vx[...] = x
    elif view == "strided batch":
        vx = np.repeat(x, 2, axis=0)[::2]
    else:
        vx = np.swapaxes(np.swapaxes(x, -1, -2).copy(), -1, -2)
    y = np.random.default_rng(6).standard_normal((64, 8))
    kernel = Matmul("matmul", False, False, 1.0)
    tracemalloc.start()
    try:
        (out,) = kernel(vx, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < out.nbytes + x.nbytes // 4
    np.testing.assert_allclose(out, x @ y, rtol=1e-12)


# == gradients =================================================================================

from headrace.testing import check_grad  # noqa: E402
from headrace_math.kernels.cpu.matmul import MatmulGrad, MulGrad  # noqa: E402


def _rand(shape, seed=0, dtype="float64"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("xs, ys, attrs", [
    ((3, 4), (4, 5), {}),
    ((2, 3, 4), (12, 5), {}),
    ((2, 3, 4), (4, 5), {"x_num_col_dims": 2}),
    ((2, 3, 4), (3, 4, 2, 3), {"x_num_col_dims": 1, "y_num_col_dims": 2}),
])
def test_mul_gradient_finite_differences(xs, ys, attrs):
    check_grad("mul", {"X": _rand(xs), "Y": _rand(ys, 1)}, wrt=["X", "Y"], attrs=attrs)


@pytest.mark.parametrize("wrt", [["X"], ["Y"]])
def test_mul_gradient_of_one_operand(wrt):
    check_grad("mul", {"X": _rand((3, 4)), "Y": _rand((4, 2), 1)}, wrt=wrt)


# (X shape, Y shape as op() sees them, i.e. before any transpose)
MATMUL_GRAD_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4, 5)),             # 1-D X: a row vector
    ((3, 4), (4,)),             # 1-D Y: a column vector
    ((4,), (4,)),               # vector . vector -> 0-D
    ((2, 3, 4), (4, 5)),        # Y broadcast over X's batch (one GEMM per gradient)
    ((3, 4), (2, 4, 5)),        # X broadcast over Y's batch (summed)
    ((2, 1, 3, 4), (3, 4, 2)),  # batch dims broadcast on both sides
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 5)),
]


def _matmul_operands(xs, ys, tx, ty, seed=0):
    """X, Y stored so that op(X), op(Y) have the shapes xs, ys (1-D operands never flip)."""
    def stored(shape, trans):
        shape = list(shape)
        if trans and len(shape) > 1:
            shape[-1], shape[-2] = shape[-2], shape[-1]
        return shape
    return _rand(stored(xs, tx), seed), _rand(stored(ys, ty), seed + 1)


@pytest.mark.parametrize("op, tx_attr, ty_attr", MATMULS)
@pytest.mark.parametrize("xs, ys", MATMUL_GRAD_SHAPES)
@pytest.mark.parametrize("tx, ty", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_gradient_finite_differences(op, tx_attr, ty_attr, xs, ys, tx, ty):
    x, y = _matmul_operands(xs, ys, tx, ty)
    attrs = {tx_attr: tx, ty_attr: ty}
    if op == "matmul":
        attrs["alpha"] = 0.75
    check_grad(op, {"X": x, "Y": y}, wrt=["X", "Y"], attrs=attrs)


@pytest.mark.parametrize("op, tx_attr, ty_attr", MATMULS)
@pytest.mark.parametrize("wrt", [["X"], ["Y"]])
def test_matmul_gradient_of_one_operand(op, tx_attr, ty_attr, wrt):
    x, y = _matmul_operands((2, 3, 4), (1, 4, 2), False, True)
    check_grad(op, {"X": x, "Y": y}, wrt=wrt, attrs={ty_attr: True})


@pytest.mark.parametrize("op, tx_attr, ty_attr", MATMULS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, ys", MATMUL_GRAD_SHAPES + [((0, 4), (4, 5)), ((3, 0), (0, 5)),
                                                          ((0, 3, 4), (4, 5)),
                                                          ((2, 3, 4), (2, 4, 0)),
                                                          ((64, 70), (70, 33))])
@pytest.mark.parametrize("tx, ty", [(False, False), (True, True)])
def test_matmul_grad_kernel_matches_reference(check, op, tx_attr, ty_attr, dtype, xs, ys, tx,
                                              ty):
    x, y = (a.astype(dtype) for a in _matmul_operands(xs, ys, tx, ty, seed=3))
    attrs = {tx_attr: tx, ty_attr: ty}
    out = REFERENCES[op]({"X": x, "Y": y}, attrs)["Out"]
    g = _rand(out.shape, 5, dtype)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {}
    check(op + "_grad", {"X": x, "Y": y, "Out@GRAD": g}, attrs, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, ys, attrs", [((128, 784), (784, 256), {}), ((0, 3), (3, 2), {}),
                                          ((2, 3, 4), (4, 2, 5), {"x_num_col_dims": 2})])
def test_mul_grad_kernel_matches_reference(check, dtype, xs, ys, attrs):
    x, y = _rand(xs, 0, dtype), _rand(ys, 1, dtype)
    out = REFERENCES["mul"]({"X": x, "Y": y}, attrs)["Out"]
    # float32 sums of 128..784 products: a few ulp of the largest terms, absolute.
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {}
    check("mul_grad", {"X": x, "Y": y, "Out@GRAD": _rand(out.shape, 2, dtype)}, attrs, **tol)


def test_mul_grad_matches_torch():
    torch = pytest.importorskip("torch")
    x, y, g = _rand((128, 784), 0, "float32"), _rand((784, 256), 1, "float32"), \
        _rand((128, 256), 2, "float32")
    xt, yt = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    (xt @ yt).backward(torch.tensor(g))
    dx, dy = MulGrad({"x_num_col_dims": 1, "y_num_col_dims": 1})(x, y, g)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(dy, yt.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_grad_kernels_read_odd_layouts(odd_layouts):
    x, y, g = _rand((3, 4)), _rand((4, 5), 1), _rand((3, 5), 2)
    expected = REFERENCES["mul_grad"]({"X": x, "Y": y, "Out@GRAD": g}, {})
    for label, v in odd_layouts(g):
        dx, dy = MulGrad({"x_num_col_dims": 1, "y_num_col_dims": 1})(x, y, v)
        np.testing.assert_allclose(dx, expected["X@GRAD"], rtol=1e-12, err_msg=label)
        dx, dy = MatmulGrad("matmul_v2_grad", False, False, 1.0)(x, y, v)
        np.testing.assert_allclose(dy, expected["Y@GRAD"], rtol=1e-12, err_msg=label)


def test_grad_kernels_reject_bad_inputs():
    mg = MulGrad({"x_num_col_dims": 1, "y_num_col_dims": 1})
    with pytest.raises(ValueError, match=r"mul_grad: Out@GRAD has shape \[3, 4\], expected "
                                         r"Out's \[3, 5\]"):
        mg(np.ones((3, 4)), np.ones((4, 5)), np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"mul_grad: X\[3, 4\] flattens to \[3, 4\] but"):
        mg(np.ones((3, 4)), np.ones((5, 5)), np.ones((3, 5)))
    with pytest.raises(TypeError, match=r"mul_grad: X, Y and Out@GRAD must share one dtype"):
        mg(np.ones((3, 4)), np.ones((4, 5)), np.ones((3, 5), np.float32))
    with pytest.raises(TypeError, match=r"mul_grad: X has dtype int64"):
        mg(np.ones((3, 4), np.int64), np.ones((4, 5), np.int64), np.ones((3, 5), np.int64))
    k = MatmulGrad("matmul_grad", False, False, 1.0)
    with pytest.raises(ValueError, match=r"matmul_grad: Out@GRAD has shape \[3\], expected "
                                         r"Out's \[2, 3, 5\]"):
        k(np.ones((2, 3, 4)), np.ones((4, 5)), np.ones(3))
    with pytest.raises(ValueError, match=r"matmul_grad: batch dims .* cannot be broadcast"):
        k(np.ones((2, 3, 4)), np.ones((3, 4, 5)), np.ones((2, 3, 5)))
    with pytest.raises(ValueError, match=r"matmul_grad: .* contraction dims 4 != 3"):
        k(np.ones((3, 4)), np.ones((3, 5)), np.ones((3, 5)))
    with pytest.raises(ValueError, match=r"matmul_grad: .* must have rank >= 1"):
        k(np.float64(1.0), np.ones(3), np.ones(1))


@pytest.mark.parametrize("op, tx_attr, ty_attr", MATMULS)
def test_matmul_grad_shape_rule(op, tx_attr, ty_attr, infer):
    ins = {"X": t([-1, 3, 4]), "Y": t([5, 4]), "Out@GRAD": t([-1, 3, 5])}
    assert infer(op + "_grad", ins, {ty_attr: True}, out="X@GRAD") == ((-1, 3, 4), F32)
    assert infer(op + "_grad", ins, {ty_attr: True}, out="Y@GRAD") == ((5, 4), F32)
    with pytest.raises(ShapeError, match=r"Out@GRAD \(out@grad_0\) must have the shape of the "
                                         r"forward Out"):
        infer(op + "_grad", dict(ins, **{"Out@GRAD": t([-1, 3, 4])}), {ty_attr: True},
              out="X@GRAD")
    with pytest.raises(ShapeError, match=r"contraction dim"):
        infer(op + "_grad", ins, {}, out="X@GRAD")


def test_mul_grad_shape_rule(infer):
    ins = {"X": t([-1, 3, 4]), "Y": t([12, 5]), "Out@GRAD": t([-1, 5])}
    assert infer("mul_grad", ins, out="X@GRAD") == ((-1, 3, 4), F32)
    assert infer("mul_grad", ins, out="Y@GRAD") == ((12, 5), F32)
    with pytest.raises(ShapeError, match=r"Out@GRAD \(out@grad_0\) must have the shape"):
        infer("mul_grad", dict(ins, **{"Out@GRAD": t([-1, 3, 5])}), out="X@GRAD")


@pytest.mark.parametrize("op", ["matmul", "matmul_v2"])
@pytest.mark.parametrize("g_shape", [(), (1,)])
def test_vector_dot_vector_is_0d_and_takes_a_one_element_gradient(op, g_shape, make_kernel):
    # Paddle 3 gives a 0-D Out; a Fluid program declares [1]: either gradient is the number.
    x, y = _rand((4,), seed=1), _rand((4,), seed=2)
    (out,) = make_kernel(op)(x, y)
    assert out.shape == () and out == pytest.approx(x @ y, rel=1e-12)
    dx, dy = make_kernel(op + "_grad")(x, y, np.full(g_shape, 2.0))
    np.testing.assert_allclose(dx, 2 * y, rtol=1e-12)
    np.testing.assert_allclose(dy, 2 * x, rtol=1e-12)


# -- the packed AVX-512 GEMM and BLAS give the same products --------------------------------------

@pytest.mark.parametrize("op, x, y, attrs", [
    ("mul", (67, 45), (45, 83), {}),
    ("mul", (3, 33, 20), (660, 37), {"x_num_col_dims": 1}),
    ("matmul_v2", (2, 40, 29), (29, 70), {}),
    ("matmul_v2", (50, 31), (70, 31), {"trans_y": True}),
    ("matmul_v2", (31, 50), (31, 70), {"trans_x": True}),
    ("matmul_v2", (31, 50), (70, 31), {"trans_x": True, "trans_y": True}),
    # X^T G with G narrower than X, X's rows a page or more apart: computed as (G^T X)^T
    # (mul's Y@GRAD, trans_x forward); narrower X reads it transposed as it lies
    ("mul", (40, 1030), (1030, 17), {}),
    ("matmul_v2", (40, 1030), (40, 33), {"trans_x": True}),
    ("mul", (70, 90), (90, 37), {}),
    ("matmul_v2", (40, 70), (40, 33), {"trans_x": True}),
    ("matmul", (2, 3, 40, 30), (2, 3, 30, 41), {"alpha": 0.5}),   # alpha: BLAS either way
    # forward products of up to 512 rows read Y in place (direct_gemm.h): 1-3 rows take four
    # panels a tile, a last panel of <= 16 columns one vector
    ("mul", (1, 300), (300, 140), {}),
    ("mul", (3, 70), (70, 270), {}),
    ("mul", (13, 50), (50, 10), {}),
    ("mul", (520, 40), (40, 33), {}),   # past the direct path's rows: packed
    ("mul", (5, 1100), (1100, 40), {}),   # past its k: packed; Y@GRAD X^T G direct
])
def test_packed_gemm_and_blas_agree(op, x, y, attrs):
    # float32 products take the core's packed GEMM where the CPU has AVX-512 (an ordinary
    # machine may lack it: then both runs below are BLAS); forward and gradients, shapes off
    # the GEMM's tiles (rows not a multiple of 12, columns not of 32).
    from headrace.testing import run_op
    from headrace_math.kernels.cpu import matmul as kernels
    rng = np.random.default_rng(1)
    xv, yv = rng.standard_normal(x).astype("float32"), rng.standard_normal(y).astype("float32")
    results = []
    before = kernels.use_packed_gemm()
    try:
        for packed in (True, False):
            kernels.use_packed_gemm(packed)
            out = run_op(op, {"X": xv, "Y": yv}, ["Out"], attrs)["Out"][0].numpy()
            g = rng.standard_normal(out.shape).astype("float32")
            grads = run_op(op + "_grad", {"X": xv, "Y": yv, "Out@GRAD": g},
                           ["X@GRAD", "Y@GRAD"], attrs)
            results.append([out, grads["X@GRAD"][0].numpy(), grads["Y@GRAD"][0].numpy()])
            rng = np.random.default_rng(1)
            rng.standard_normal(x), rng.standard_normal(y)   # the same Out@GRAD next time
    finally:
        kernels.use_packed_gemm(before)
    # float32 sums of up to 1030 products in two orders: rounding grows with the length
    tol = 2e-5 * max(1, max(x + y) / 256)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
