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
    ([2, 3, 4], {"reduce_all": True}, ()),                          # Paddle 3: 0-D
    ([2, 3, 4], {"reduce_all": True, "keep_dim": True}, (1, 1, 1)),
    ([2, 3, 4], {"reduce_all": True, "dim": [1]}, ()),              # dim is ignored
    ([2, 3, 4], {"dim": [0, 1, 2]}, ()),                            # all dims: 0-D too
    ([2, 3, 4], {"dim": [-3, -2, -1], "keep_dim": True}, (1, 1, 1)),
    ([2, 3, 4], {"dim": []}, ()),                                   # Paddle 2: [] = all
    ([5], {}, ()),
    ([5], {"keep_dim": True}, (1,)),
    ([1], {}, ()),
    ([], {}, ()),                                                    # a 0-D X is reduced whole
    ([], {"keep_dim": True}, ()),
    # unknown dims
    ([-1, 3, 4], {"dim": [1]}, (-1, 4)),
    ([-1, 3, 4], {"dim": [0]}, (3, 4)),
    ([-1, -1], {"dim": [-1], "keep_dim": True}, (-1, 1)),
    ([-1, 3], {"reduce_all": True}, ()),
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
    assert infer("reduce_sum", {"X": ([2, 3], "bool")}, attrs) == ((), "int64")


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
    # 0-D, as Paddle 3 declares it (Fluid wrote [1]).
    out = build("mean", {"X": (shape, dtype, 1)})
    assert (out.shape, out.dtype, out.lod_level) == ((), dtype, 0)


def test_mean_rejects_integers(infer):
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        infer("mean", {"X": ([2], "int64")})


def test_mean_has_no_attributes(infer):
    with pytest.raises(OpValidationError, match="unknown attribute 'dim'"):
        infer("mean", {"X": ([2], "float32")}, {"dim": [0]})


# -- kernels --------------------------------------------------------------------------------

import numpy as np  # noqa: E402

from headrace_math.kernels.cpu.reduce import KERNELS as CPU_KERNELS  # noqa: E402
from headrace_math.reference.reduce import REFERENCES  # noqa: E402

FLOATS = ["float32", "float64"]
INT_OK = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]

ATTR_CASES = [
    {}, {"dim": [1]}, {"dim": [-1]}, {"dim": [1], "keep_dim": True},
    {"dim": [1, 2]}, {"dim": [0, 1]}, {"dim": [0, 2]}, {"dim": [-1, 0], "keep_dim": True},
    {"dim": [0, 1, 2, 3]}, {"dim": [3, 1]}, {"dim": [0, 2, 3]}, {"dim": []},
    {"reduce_all": True}, {"reduce_all": True, "keep_dim": True},
    {"reduce_all": True, "dim": [1]},
]


def _x(op, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if op in LOGICAL:
        return rng.random(shape) < 0.7
    if dtype.startswith("int"):
        return rng.integers(-3, 4, shape).astype(dtype)
    if op == "reduce_prod":
        return (rng.random(shape) + 0.5).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def test_every_reduction_has_a_kernel():
    grads = [op + "_grad" for op in NUMERIC + ["mean"]]
    assert sorted(op for op, _, _ in CPU_KERNELS) == sorted(NUMERIC + LOGICAL + ["mean"] + grads)


@pytest.mark.parametrize("op, dtype", [(op, dt) for op in NUMERIC for dt in FLOATS]
                         + [(op, dt) for op in INT_OK for dt in ("int32", "int64")]
                         + [(op, "bool") for op in LOGICAL])
@pytest.mark.parametrize("attrs", ATTR_CASES)
def test_kernel_matches_reference(check, op, dtype, attrs):
    check(op, {"X": _x(op, (2, 3, 4, 5), dtype)}, attrs)


@pytest.mark.parametrize("op, dtype", [(op, "float64") for op in NUMERIC]
                         + [(op, "bool") for op in LOGICAL])
@pytest.mark.parametrize("shape, attrs", [
    ((5,), {}), ((5,), {"keep_dim": True}), ((1, 1), {"dim": [0]}), ((3, 1, 4), {"dim": [1]}),
    ((1, 3, 1, 4, 1), {"dim": [1, 3]}), ((1, 3, 1, 4, 1), {"dim": [0, 2, 4]}),
    ((2, 1, 3), {"dim": [0, 1]}), ((6, 7), {"dim": [0]}), ((6, 7), {"dim": [-1]}),
    ((0, 3), {"dim": [1]}), ((3, 0), {"dim": [0]}), ((2, 0, 3), {"dim": [0, 2]}),
    ((4, 2, 3, 2, 5), {"dim": [0, 2, 4]}), ((4, 2, 3, 2, 5), {"dim": [1, 3], "keep_dim": True}),
])
def test_kernel_shapes(check, op, dtype, shape, attrs):
    check(op, {"X": _x(op, shape, dtype, seed=1)}, attrs)


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_prod"] + LOGICAL)
def test_empty_reductions_give_the_identity(check, op):
    dtype = "bool" if op in LOGICAL else "float64"
    out = check(op, {"X": np.zeros((3, 0, 2), dtype)}, {"dim": [1]})["Out"]
    assert out.shape == (3, 2)


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
def test_empty_max_min_have_no_identity(op, make_kernel):
    with pytest.raises(ValueError, match=rf"{op}: X\[3, 0\] has no elements to reduce"):
        make_kernel(op, {"dim": [1]})(np.zeros((3, 0)))
    # ... unless nothing is asked of them.
    assert make_kernel(op, {"dim": [1]})(np.zeros((0, 3)))[0].shape == (0,)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mean_op(check, dtype):
    for shape in [(4, 5), (7,), (1,), (2, 3, 4)]:
        check("mean", {"X": _x("mean", shape, dtype)})


def test_mean_of_nothing_is_nan(check):
    assert np.isnan(check("mean", {"X": np.zeros((0, 3))})["Out"]).all()


def test_float32_sums_accumulate_in_double(make_kernel):
    x = np.full(10 ** 6, 0.1, np.float32)
    x[0] = 1e4                          # float32 running sums would lose the small terms
    exact = np.sum(x.astype(np.float64))
    assert make_kernel("mean", {})(x)[0][()] == np.float32(exact / x.size)
    assert make_kernel("reduce_sum", {"dim": [0]})(x)[0][()] == np.float32(exact)
    xs = x.reshape(1000, 1000)          # the row-buffer path (inner > 1)
    np.testing.assert_array_equal(make_kernel("reduce_sum", {"dim": [0]})(xs)[0],
                                  xs.astype(np.float64).sum(0).astype(np.float32))


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
@pytest.mark.parametrize("dim", [[0], [1]])
def test_max_min_propagate_nan(check, op, dim):
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, -1.0], [0.0, 5.0, 7.0]])
    check(op, {"X": x}, {"dim": dim})


@pytest.mark.parametrize("op", NUMERIC)
def test_out_dtype_kernel(check, op):
    x = _x(op, (3, 4), "float32", seed=2)
    check(op, {"X": x}, {"dim": [1], "out_dtype": dtypes.to_proto("float64")})
    check(op, {"X": x}, {"dim": [1], "in_dtype": dtypes.to_proto("float64"),
                         "out_dtype": dtypes.to_proto("float64")})


@pytest.mark.parametrize("op", INT_OK)
def test_in_dtype_casts_first(check, op):
    # in_dtype=bool: X is cast to bool, reduced, and stored back in X's dtype.
    x = np.random.default_rng(5).integers(-2, 3, (3, 5)).astype(np.float32)
    out = check(op, {"X": x}, {"dim": [1], "in_dtype": dtypes.to_proto("bool")})["Out"]
    assert out.dtype == np.float32 and set(out.tolist()) <= {0.0, 1.0}
    check(op, {"X": x}, {"dim": [0], "in_dtype": dtypes.to_proto("int32")})


def test_bool_sums(check):
    x = np.random.default_rng(3).random((4, 5)) < 0.5
    assert check("reduce_sum", {"X": x}, {"dim": [1], "out_dtype": dtypes.to_proto("int64")}
                 )["Out"].dtype == np.int64
    assert check("reduce_sum", {"X": x}, {"dim": [1]})["Out"].dtype == bool
    assert check("reduce_sum", {"X": x}, {"reduce_all": True,
                                          "out_dtype": dtypes.to_proto("int32")}
                 )["Out"].dtype == np.int32


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_prod"])
def test_int64_wraps_like_numpy(check, op):
    x = np.array([[2 ** 62, 2 ** 62, 3], [-(2 ** 63), 5, 7]], np.int64)
    check(op, {"X": x}, {"dim": [1]})
    check(op, {"X": x.astype(np.int32)}, {"dim": [0]})


@pytest.mark.parametrize("op", NUMERIC + LOGICAL)
@pytest.mark.parametrize("attrs", [{}, {"keep_dim": True}, {"dim": [-1]}])
def test_zero_dim_directly(op, attrs, make_kernel):
    x = np.array(True) if op in LOGICAL else np.array(2.5)
    (out,) = make_kernel(op, attrs)(x)
    expected = REFERENCES[op]({"X": x}, attrs)["Out"]
    assert out.shape == expected.shape == ()
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("op", NUMERIC + LOGICAL + ["mean"])
@pytest.mark.parametrize("attrs", [{"dim": [0, 2]}, {"dim": [1]}, {"dim": [2]},
                                   {"reduce_all": True}])
def test_odd_layouts_directly(op, attrs, odd_layouts, make_kernel):
    if op == "mean":
        attrs = {}
    x = _x(op, (3, 4, 5), "float64", seed=4)
    expected = REFERENCES[op]({"X": x}, attrs)["Out"]
    kernel = make_kernel(op, attrs)
    for label, v in odd_layouts(x):
        (out,) = kernel(v)
        assert out.dtype == expected.dtype and out.flags.c_contiguous
        np.testing.assert_allclose(out, expected, rtol=1e-13, err_msg=label)


@pytest.mark.parametrize("op", NUMERIC + LOGICAL)
@pytest.mark.parametrize("dim, msg", [([3], r"dim 3 is out of range for X of rank 3"),
                                      ([-4], r"dim -4 is out of range"),
                                      ([0, -3], r"names dimension 0 twice")])
def test_kernel_rejects_bad_dims(op, dim, msg, make_kernel):
    x = _x(op, (2, 3, 4), "float64")
    with pytest.raises(ValueError, match=rf"{op}: .*{msg}"):
        make_kernel(op, {"dim": dim})(x)


@pytest.mark.parametrize("op, x", [
    ("mean", np.arange(3)), ("reduce_mean", np.arange(3)), ("reduce_max", np.ones(3, np.int16)),
    ("reduce_all", np.ones(3)), ("reduce_any", np.arange(3)), ("reduce_sum", np.array(["a"])),
    ("reduce_prod", np.ones(3, np.float16)),
])
def test_kernel_rejects_bad_dtypes(op, x, make_kernel):
    with pytest.raises(TypeError, match=rf"{op}: X has dtype"):
        make_kernel(op)(x)


def test_one_kernel_many_shapes(make_kernel):
    # The kernel plans once per shape; a new shape must get a new plan, an old one again.
    kernel = make_kernel("reduce_sum", {"dim": [0, -1]})
    for shape in [(2, 3, 4), (5, 1, 2), (2, 3, 4), (3, 2), (0, 4)]:
        x = np.arange(float(np.prod(shape))).reshape(shape)
        np.testing.assert_array_equal(kernel(x)[0], REFERENCES["reduce_sum"](
            {"X": x}, {"dim": [0, -1]})["Out"])


# == gradients =================================================================================

from headrace.testing import check_grad  # noqa: E402


def t(shape, dtype="float32"):
    return (shape, dtype, 0)


GRAD_OPS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]
GRAD_ATTRS = [
    {"dim": [0]},
    {"dim": [-1]},
    {"dim": [1], "keep_dim": True},
    {"dim": [0, 2]},                        # two reduced runs: the transposing path
    {"dim": [2, 0], "keep_dim": True},
    {"reduce_all": True},
    {"reduce_all": True, "keep_dim": True},
    {"dim": []},                            # Paddle 2: everything
]


def _reduce_input(op, shape=(2, 3, 4), seed=0):
    """Distinct values (max/min have one winner per slice); prod's factors near 1."""
    rng = np.random.default_rng(seed)
    x = rng.permutation(np.arange(int(np.prod(shape)))).reshape(shape) * 0.1 - 1.0
    if op == "reduce_prod":
        x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
    return x


def test_mean_gradient_finite_differences():
    check_grad("mean", {"X": _reduce_input("mean", (3, 4))}, wrt=["X"])
    check_grad("mean", {"X": _reduce_input("mean", (5,))}, wrt=["X"])


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("attrs", GRAD_ATTRS)
def test_gradient_finite_differences(op, attrs):
    check_grad(op, {"X": _reduce_input(op)}, wrt=["X"], attrs=attrs)


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("shape, attrs", [((5,), {}), ((2, 1, 3), {"dim": [1]}),
                                          ((1, 4), {"dim": [0]})])
def test_gradient_odd_shapes(op, shape, attrs):
    check_grad(op, {"X": _reduce_input(op, shape, seed=1)}, wrt=["X"], attrs=attrs)


@pytest.mark.parametrize("zeros", [[(0, 1, 1)], [(0, 1, 1), (1, 1, 2)], [(0, 1, 1), (0, 2, 1)]])
@pytest.mark.parametrize("attrs", [{"dim": [1]}, {"dim": [0, 1]}, {"reduce_all": True}])
def test_prod_gradient_with_zeros(zeros, attrs):
    # The product is linear in each factor, so central differences are exact even at 0; one
    # zero in a slice leaves the product of the others at its place, two leave all zero.
    x = _reduce_input("reduce_prod", (2, 3, 4), seed=2)
    for z in zeros:
        x[z] = 0.0
    check_grad("reduce_prod", {"X": x}, wrt=["X"], attrs=attrs)


def test_prod_gradient_values_with_zeros(make_kernel):
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
    (dx,) = make_kernel("reduce_prod_grad", {"dim": [1]})(x, np.array([1.0, 1.0, 2.0]))
    assert dx.tolist() == [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0], [12.0, 6.0, 4.0]]


def test_max_gradient_goes_to_every_tie(make_kernel):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    out = x.max(axis=1)
    (dx,) = make_kernel("reduce_max_grad", {"dim": [1]})(x, out, np.array([5.0, 7.0]))
    assert dx.tolist() == [[0.0, 5.0, 5.0], [7.0, 0.0, 0.0]]


def _grad_inputs(op, x, attrs, seed=4):
    inputs = {"X": x}
    # max and min of nothing have no value: any Out of the right shape will do.
    ref = "reduce_sum" if x.size == 0 and op in ("reduce_max", "reduce_min") else op
    out = REFERENCES[ref]({"X": x}, attrs)["Out"]
    inputs["Out@GRAD"] = np.random.default_rng(seed).standard_normal(out.shape).astype(x.dtype)
    if op in ("reduce_max", "reduce_min"):
        inputs["Out"] = out
    return inputs


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, attrs", [((2, 3, 4), a) for a in GRAD_ATTRS] + [
    ((0, 3), {"dim": [1]}), ((3, 0), {"dim": [1]}), ((4, 300), {"dim": [0]}),
    ((2, 3, 4, 5), {"dim": [1, 3]}), ((7,), {"dim": [0], "keep_dim": True})])
def test_grad_kernel_matches_reference(check, op, dtype, shape, attrs):
    x = _reduce_input(op, shape, seed=3).astype(dtype)
    check(op + "_grad", _grad_inputs(op, x, attrs), attrs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 4), (1,), (0, 2), (5, 1, 2)])
def test_mean_grad_kernel_matches_reference(check, dtype, shape):
    x = _reduce_input("mean", shape, seed=5).astype(dtype)
    check("mean_grad", _grad_inputs("mean", x, {}), {})


def test_grad_kernels_take_a_zero_dim_x_and_loss(make_kernel):
    (dx,) = make_kernel("mean_grad")(np.float64(2.0), np.array(3.0))
    assert dx.shape == () and dx == 3.0
    (dx,) = make_kernel("reduce_sum_grad", {"keep_dim": True})(np.float64(2.0), np.array(3.0))
    assert dx.shape == () and dx == 3.0


def test_grad_casts_another_float_out_dtype(make_kernel):
    # reduce_sum with out_dtype float64 over float32 X: Out@GRAD is float64, X@GRAD float32.
    x = np.ones((2, 3), np.float32)
    (dx,) = make_kernel("reduce_sum_grad", {"dim": [1], "out_dtype": 6})(x, np.array([1.0, 2.0]))
    assert dx.dtype == np.float32 and dx.tolist() == [[1, 1, 1], [2, 2, 2]]


@pytest.mark.parametrize("op", GRAD_OPS)
def test_grad_kernel_rejects_bad_inputs(op, make_kernel):
    kernel = make_kernel(op + "_grad", {"dim": [1]})
    x = np.ones((2, 3))
    extra = [np.ones(2)] if op in ("reduce_max", "reduce_min") else []
    with pytest.raises(ValueError, match=rf"{op}_grad: Out@GRAD has shape \[3\], expected "
                                         r"Out's \[2\] for X\[2, 3\]"):
        kernel(x, *extra, np.ones(3))
    with pytest.raises(TypeError, match=rf"{op}_grad: X has dtype int64"):
        kernel(np.ones((2, 3), np.int64), *extra, np.ones(2))
    with pytest.raises(TypeError, match=rf"{op}_grad: Out@GRAD has dtype int64"):
        kernel(x, *extra, np.ones(2, np.int64))
    with pytest.raises(ValueError, match=rf"{op}_grad: dim 5 is out of range"):
        make_kernel(op + "_grad", {"dim": [5]})(x, *extra, np.ones(2))


def test_mean_grad_rejects_a_non_scalar_gradient(make_kernel):
    with pytest.raises(ValueError, match=r"mean_grad: Out@GRAD has shape \[2\], expected "
                                         r"Out's \[\]"):
        make_kernel("mean_grad")(np.ones((2, 3)), np.ones(2))


@pytest.mark.parametrize("op", ["mean"] + GRAD_OPS)
@pytest.mark.parametrize("g_shape", [(), (1,), (1, 1)])
def test_zero_d_out_takes_a_one_element_gradient_of_any_rank(op, g_shape, make_kernel):
    # Paddle 3 gives a 0-D Out; Fluid programs declare [1] and Paddle fills a loss's gradient
    # in the loss's declared shape: each reads as the one number.
    x = _reduce_input(op, (2, 3), seed=6)
    attrs = {} if op == "mean" else {"reduce_all": True}
    (out,) = make_kernel(op, attrs)(x)
    assert out.shape == ()
    g = np.full(g_shape, 0.5)
    extra = [out.reshape(g_shape)] if op in ("reduce_max", "reduce_min") else []
    (dx,) = make_kernel(op + "_grad", attrs)(x, *extra, g)
    want = REFERENCES[op + "_grad"](
        {"X": x, "Out@GRAD": g, **({"Out": extra[0]} if extra else {})}, attrs)["X@GRAD"]
    np.testing.assert_allclose(dx, want, rtol=1e-12)
    assert dx.shape == x.shape


@pytest.mark.parametrize("op", GRAD_OPS)
def test_grad_shape_rule(op, infer):
    ins = {"X": t([-1, 3, 4]), "Out@GRAD": t([-1, 4])}
    if op in ("reduce_max", "reduce_min"):
        ins["Out"] = t([-1, 4])
    assert infer(op + "_grad", ins, {"dim": [1]}, out="X@GRAD") == ((-1, 3, 4), "float32")
    with pytest.raises(ShapeError, match=r"input 'Out@GRAD' \(out@grad_0\) must have the shape "
                                         r"of the forward Out"):
        infer(op + "_grad", ins, {"dim": [1], "keep_dim": True}, out="X@GRAD")


def test_mean_grad_shape_rule(infer):
    assert infer("mean_grad", {"X": t([-1, 3]), "Out@GRAD": t([1])},
                 out="X@GRAD") == ((-1, 3), "float32")
    assert infer("mean_grad", {"X": t([-1, 3]), "Out@GRAD": t([])},
                 out="X@GRAD") == ((-1, 3), "float32")
    assert infer("mean_grad", {"X": t([-1, 3]), "Out@GRAD": t([1, 1])},
                 out="X@GRAD") == ((-1, 3), "float32")
    for op in GRAD_OPS:      # a whole reduction's gradient: 0-D, or Fluid's [1]
        for g in ([], [1]):
            ins = {"X": t([-1, 3]), "Out@GRAD": t(g)}
            if op in ("reduce_max", "reduce_min"):
                ins["Out"] = t(g)
            assert infer(op + "_grad", ins, {"reduce_all": True},
                         out="X@GRAD") == ((-1, 3), "float32")
    with pytest.raises(ShapeError, match="must have the shape of the forward Out"):
        infer("mean_grad", {"X": t([-1, 3]), "Out@GRAD": t([-1, 3])}, out="X@GRAD")
