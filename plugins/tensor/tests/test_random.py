"""uniform_random and gaussian_random: shapes, float dtypes, distribution parameters."""
import pytest

from headrace import dtypes as dt
from headrace.errors import OpValidationError, ShapeError
from headrace.ops import default_registry
from headrace.testing import infer_shapes

RANDOM_OPS = ["uniform_random", "gaussian_random"]


def rand(op_type, attrs=None, inputs=None):
    (out,) = infer_shapes(op_type, inputs, attrs=attrs)["Out"]
    return out


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_no_gradient_and_defaults(op_type):
    opdef = default_registry().get(op_type)
    assert not opdef.differentiable
    assert opdef.attrs["seed"].default == 0 and opdef.attrs["dtype"].default == 5


@pytest.mark.parametrize("op_type", RANDOM_OPS)
@pytest.mark.parametrize("shape", [[2, 3], [1], [], [4, 1, 5, 6]])
def test_shape_from_attribute(op_type, shape):
    assert rand(op_type, {"shape": shape}) == (tuple(shape), "float32")


@pytest.mark.parametrize("op_type", RANDOM_OPS)
@pytest.mark.parametrize("name", dt.FLOAT_DTYPES)
def test_float_dtypes(op_type, name):
    assert rand(op_type, {"shape": [3], "dtype": dt.to_proto(name)}) == ((3,), name)


@pytest.mark.parametrize("op_type", RANDOM_OPS)
@pytest.mark.parametrize("value", [2, 3, 0, 42])  # int32, int64, bool, not a type
def test_non_float_dtype_is_an_error(op_type, value):
    with pytest.raises(OpValidationError, match=r"'dtype' is not a valid element type; valid: "
                                                r"4 \(float16\), 5 \(float32\), 6 \(float64\), "
                                                r"22 \(bfloat16\)"):
        rand(op_type, {"shape": [3], "dtype": value})


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_shape_tensors(op_type):
    assert rand(op_type, {}, {"ShapeTensor": ([2], "int64")}) == ((-1, -1), "float32")
    tensors = {"ShapeTensorList": [([1], "int32")] * 3}
    assert rand(op_type, {"shape": [-1, 4, -1]}, tensors) == ((-1, 4, -1), "float32")


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_negative_dim_without_tensor(op_type):
    with pytest.raises(ShapeError, match=r"'shape' has negative dims"):
        rand(op_type, {"shape": [-1, 3]})


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_negative_seed(op_type):
    with pytest.raises(OpValidationError, match=r"'seed' must be >= 0 \(got -3\)"):
        rand(op_type, {"shape": [1], "seed": -3})


@pytest.mark.parametrize("lo, hi", [(1.0, 1.0), (2.0, -2.0)])
def test_uniform_min_below_max(lo, hi):
    with pytest.raises(ShapeError, match=r"'min' must be less than 'max'(.|\n)*"
                                         rf"found:    min={lo}, max={hi}"):
        rand("uniform_random", {"shape": [2], "min": lo, "max": hi})


@pytest.mark.parametrize("attrs, match", [
    ({"min": float("-inf")}, r"'min' must be finite"),
    ({"max": float("nan")}, r"'max' must be finite"),
    ({"diag_num": -1}, r"'diag_num' must be >= 0"),
    ({"diag_step": -1}, r"'diag_step' must be >= 0"),
])
def test_uniform_attribute_checks(attrs, match):
    with pytest.raises(OpValidationError, match=match):
        rand("uniform_random", {"shape": [2], **attrs})


def test_uniform_diagonal():
    assert rand("uniform_random", {"shape": [3, 3], "diag_num": 3, "diag_step": 3}) == \
        ((3, 3), "float32")
    with pytest.raises(ShapeError, match=r"diagonal(.|\n)*numel\(Out\) = 9"):
        rand("uniform_random", {"shape": [3, 3], "diag_num": 4, "diag_step": 3})


@pytest.mark.parametrize("std", [0.0, 0.01, 10.0])
def test_gaussian_std(std):
    assert rand("gaussian_random", {"shape": [5], "mean": -2.0, "std": std}) == ((5,), "float32")


@pytest.mark.parametrize("std", [-0.1, float("inf"), float("nan")])
def test_gaussian_bad_std(std):
    with pytest.raises(OpValidationError, match=r"'std' must be finite and >= 0"):
        rand("gaussian_random", {"shape": [5], "std": std})


def test_gaussian_rejects_uniform_attributes():
    with pytest.raises(OpValidationError, match=r"unknown attribute 'min'"):
        rand("gaussian_random", {"shape": [5], "min": 0.0})


# == kernels ===================================================================================
#
# Random outputs have no elementwise reference: the tests check bounds and moments over large
# samples, and that seeds reproduce sequences.

import numpy as np  # noqa: E402

import headrace  # noqa: E402
from headrace.errors import OpError  # noqa: E402
from headrace.runtime import Executor, Scope  # noqa: E402
from headrace.testing import run_op  # noqa: E402
from headrace_tensor.kernels.cpu import random as krandom  # noqa: E402
from headrace_tensor.reference._random_runs import (  # noqa: E402
    check_seeded_sequences, check_shape_tensors, random_program, runs)

N = 200_000


def draw(op_type, attrs, inputs=None):
    (t,) = run_op(op_type, inputs or {}, attrs=attrs)["Out"]
    return t.numpy()


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
@pytest.mark.parametrize("lo, hi", [(-1.0, 1.0), (2.0, 5.0), (-3.0, -2.5)])
def test_uniform_statistics(name, lo, hi):
    x = draw("uniform_random", {"shape": [N // 100, 100], "min": lo, "max": hi, "seed": 11,
                                "dtype": dt.to_proto(name)})
    assert x.shape == (N // 100, 100) and x.dtype == np.dtype(name)
    x64 = x.astype(np.float64)
    assert x64.min() >= lo and x64.max() < hi
    width = hi - lo
    assert abs(x64.mean() - (lo + hi) / 2) < 0.01 * width
    assert abs(x64.std() - width / np.sqrt(12)) < 0.01 * width
    # roughly flat: each tenth of the range holds about a tenth of the draws
    counts = np.histogram(x64, bins=10, range=(lo, hi))[0] / x.size
    assert np.all(np.abs(counts - 0.1) < 0.01)


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_uniform_stays_below_max_when_rounding_would_reach_it(name):
    # Two float32 steps wide: lo + width * u rounds up to max for u close to 1.
    lo = 1.0
    hi = float(np.nextafter(np.nextafter(np.float32(1), np.float32(2)), np.float32(2)))
    x = draw("uniform_random", {"shape": [N], "min": lo, "max": hi, "seed": 3,
                                "dtype": dt.to_proto(name)})
    assert x.min() >= lo and x.max() < hi


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
@pytest.mark.parametrize("mean, std", [(0.0, 1.0), (-3.0, 0.5), (10.0, 4.0)])
def test_gaussian_statistics(name, mean, std):
    x = draw("gaussian_random", {"shape": [N], "mean": mean, "std": std, "seed": 5,
                                 "dtype": dt.to_proto(name)})
    assert x.dtype == np.dtype(name)
    x64 = x.astype(np.float64)
    assert abs(x64.mean() - mean) < 0.02 * std
    assert abs(x64.std() - std) < 0.02 * std
    # about 68% / 95% within one / two standard deviations
    assert abs(np.mean(np.abs(x64 - mean) < std) - 0.6827) < 0.01
    assert abs(np.mean(np.abs(x64 - mean) < 2 * std) - 0.9545) < 0.01
    assert np.all(np.abs(x64 - mean) < 7 * std)


def test_gaussian_std_zero_is_the_mean():
    x = draw("gaussian_random", {"shape": [5], "mean": 2.5, "std": 0.0, "seed": 1})
    np.testing.assert_array_equal(x, np.full(5, 2.5, "float32"))


@pytest.mark.parametrize("op_type", RANDOM_OPS)
@pytest.mark.parametrize("op_seed, program_seed", [(7, 0), (0, 7), (7, 9)])
def test_seeded_sequences_reproduce(op_type, op_seed, program_seed):
    check_seeded_sequences(runs, op_type, op_seed, program_seed)


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_different_seeds_differ(op_type):
    a = runs(random_program(op_type, op_seed=1), 1)[0]
    b = runs(random_program(op_type, op_seed=2), 1)[0]
    c = runs(random_program(op_type, program_seed=1), 1)[0]
    assert not np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_unseeded_is_nondeterministic(op_type):
    prog = random_program(op_type)
    assert not np.array_equal(runs(prog, 1)[0], runs(prog, 1)[0])


def test_program_seed_gives_each_op_its_own_stream():
    prog = headrace.Program()
    prog.random_seed = 3
    block = prog.global_block()
    for name in ("a", "b"):
        block.create_var(name=name, shape=(100,), dtype="float32")
        block.append_op("uniform_random", {}, {"Out": name}, {"shape": [100]})
    a, b = Executor().run(prog, fetch_list=["a", "b"], scope=Scope())
    assert not np.array_equal(a, b)


def test_random_shape_tensors():
    check_shape_tensors(draw)


def test_uniform_diagonal_kernel():
    x = draw("uniform_random", {"shape": [4, 4], "diag_num": 4, "diag_step": 4,
                                "diag_val": 9.0, "seed": 2, "min": 0.0, "max": 1.0})
    np.testing.assert_array_equal(np.diag(x), np.full(4, 9.0, "float32"))
    off = x[~np.eye(4, dtype=bool)]
    assert off.min() >= 0.0 and off.max() < 1.0


def test_uniform_diagonal_past_a_runtime_shape():
    with pytest.raises(OpError, match=r"diag_num=3, diag_step=3 run past the end of an output "
                                      r"of 4 elements"):
        draw("uniform_random", {"shape": [-1], "diag_num": 3, "diag_step": 3, "seed": 1},
             {"ShapeTensor": np.array([4], "int64")})


@pytest.mark.parametrize("kernel, args, error, match", [
    ("uniform", (np.array([2, -3]),), ValueError, r"ShapeTensor has a negative dim"),
    ("uniform", (np.array([[2.5]]),), TypeError, r"must hold integers"),
    ("gaussian", (None, [np.array([1, 2])]), ValueError, r"must hold exactly one element"),
    ("gaussian", ("shape",), TypeError, r"must hold integers"),
])
def test_random_direct_bad_inputs(kernel, args, error, match):
    attrs = {"shape": [2], "seed": 1, "dtype": 5, "min": -1.0, "max": 1.0, "diag_num": 0,
             "diag_step": 0, "diag_val": 1.0, "mean": 0.0, "std": 1.0}
    k = krandom.UniformRandom(attrs) if kernel == "uniform" else krandom.GaussianRandom(attrs)
    with pytest.raises(error, match=match):
        k(*args)


@pytest.mark.parametrize("cls, attrs, match", [
    (krandom.UniformRandom, {"min": 1.0, "max": 1.0}, r"min \(1.0\) must be less than max"),
    (krandom.UniformRandom, {"dtype": 2}, r"dtype 2 \(int32\) has no CPU kernel"),
    (krandom.GaussianRandom, {"std": -1.0}, r"std must be >= 0"),
])
def test_random_direct_bad_attributes(cls, attrs, match):
    base = {"shape": [2], "seed": 1, "dtype": 5, "min": -1.0, "max": 1.0, "diag_num": 0,
            "diag_step": 0, "diag_val": 1.0, "mean": 0.0, "std": 1.0}
    with pytest.raises((ValueError, TypeError), match=match):
        cls({**base, **attrs})
