"""dropout: shapes, the uint8 Mask, attribute checks; the CPU kernel: test mode against the
reference, training statistics and reproducibility from seeds."""
import numpy as np
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace import Program
from headrace.runtime import CPUPlace, Executor, Scope
from headrace.testing import build_op, infer_shapes


@pytest.mark.parametrize("shape", [(8, 16), (-1, 16), (2, 3, 4, 5), (7,), ()])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_out_and_mask(shape, dtype):
    out = infer_shapes("dropout", {"X": (shape, dtype)}, outputs={"Out": 1, "Mask": 1})
    assert out == {"Out": [(shape, dtype)], "Mask": [(shape, "uint8")]}


@pytest.mark.parametrize("attrs", [
    {}, {"is_test": True}, {"dropout_prob": 0.0}, {"dropout_prob": 1.0},
    {"dropout_implementation": "upscale_in_train", "fix_seed": True, "seed": 7},
])
def test_mask_is_created_and_out_keeps_the_lod(attrs):
    prog, op = build_op("dropout", {"X": ([-1, 4], "float32", 1)}, attrs=attrs)
    block = prog.global_block()
    assert block.var(op.output("Out")[0]).lod_level == 1
    assert block.var(op.output("Mask")[0]).dtype == "uint8"


@pytest.mark.parametrize("seed_shape", [[1], [-1]])
def test_seed_tensor(seed_shape):
    out = infer_shapes("dropout", {"X": ([4, 4], "float32"), "Seed": (seed_shape, "int32")})
    assert out["Out"] == [((4, 4), "float32")]


def test_seed_tensor_must_hold_one_value():
    with pytest.raises(ShapeError, match=r"Seed \(seed_0\) must hold one value"):
        infer_shapes("dropout", {"X": ([4, 4], "float32"), "Seed": ([2], "int32")})


@pytest.mark.parametrize("inputs, attrs, match", [
    ({}, {"dropout_prob": 1.5}, r"'dropout_prob' must be in \[0.0, 1.0\]"),
    ({}, {"dropout_prob": -0.1}, r"'dropout_prob' must be in"),
    ({}, {"dropout_implementation": "upscale_in_infer"}, r"'dropout_implementation' must be"),
    ({}, {"seed": 1.0}, r"'seed' is not of type int"),
    ({"X": ([4], "int64")}, {}, r"input 'X' \(x_0\) has an unsupported dtype"),
    ({"Seed": ([1], "int64")}, {}, r"input 'Seed' \(seed_0\) has an unsupported dtype"),
])
def test_validation_errors(inputs, attrs, match):
    inputs = {"X": ([4], "float32"), **inputs}
    with pytest.raises(OpValidationError, match=match):
        infer_shapes("dropout", inputs, attrs=attrs)


# ---------------------------------------------------------------- kernel
DTYPES = ["float32", "float64"]
IMPLS = ["downgrade_in_infer", "upscale_in_train"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("p", [0.0, 0.35, 1.0])
def test_test_mode_matches_reference(check, dtype, impl, p):
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(dtype)
    check("dropout", {"X": x}, {"is_test": True, "dropout_implementation": impl,
                                "dropout_prob": p})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("p", [0.0, 0.2, 0.5, 1.0])
def test_fixed_seed_training_matches_reference(check, dtype, impl, p):
    x = np.random.default_rng(1).standard_normal((5, 7, 3)).astype(dtype)
    check("dropout", {"X": x}, {"fix_seed": True, "seed": 42, "dropout_prob": p,
                                "dropout_implementation": impl})


@pytest.mark.parametrize("dtype", DTYPES)
def test_seed_input_matches_reference(check, dtype):
    x = np.random.default_rng(2).standard_normal((6, 6)).astype(dtype)
    check("dropout", {"X": x, "Seed": np.array([123], np.int32)}, {"dropout_prob": 0.4})


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_training_statistics(kernel, impl, p):
    x = np.random.default_rng(3).random(200_000) + 1.0
    out, mask = kernel("dropout", {"dropout_prob": p, "dropout_implementation": impl,
                                   "fix_seed": True, "seed": 9}, "float64")(x)
    assert mask.dtype == np.uint8 and set(np.unique(mask)) <= {0, 1}
    kept = mask.mean()
    assert abs(kept - (1 - p)) < 4 * np.sqrt(p * (1 - p) / x.size)
    scale = 1 / (1 - p) if impl == "upscale_in_train" else 1.0
    np.testing.assert_array_equal(out, np.where(mask == 1, x * scale, 0.0))
    if impl == "upscale_in_train":   # the expectation is kept
        assert abs(out.mean() / x.mean() - 1) < 0.02


@pytest.mark.parametrize("p, kept", [(0.0, 1), (1.0, 0)])
def test_training_extremes(kernel, p, kept):
    x = np.ones((100, 10), np.float32)
    for impl in IMPLS:
        out, mask = kernel("dropout", {"dropout_prob": p, "dropout_implementation": impl},
                           "float32")(x)
        assert (mask == kept).all() and (out == kept).all()


def test_fixed_seed_drops_the_same_elements_every_run(kernel):
    k = kernel("dropout", {"fix_seed": True, "seed": 5})
    x = np.ones((50, 50), np.float32)
    (_, m1), (_, m2) = k(x), k(x)
    np.testing.assert_array_equal(m1, m2)
    (_, m3) = kernel("dropout", {"fix_seed": True, "seed": 6})(x)
    assert (m1 != m3).any()


def _program_dropout(random_seed, attrs=None):
    prog = Program()
    prog.random_seed = random_seed
    block = prog.global_block()
    block.create_var(name="x", shape=(40, 40), dtype="float32")
    block.append_op("dropout", {"X": ["x"]}, {"Out": ["out"], "Mask": ["mask"]}, attrs or {})
    return prog


def _masks(prog, runs):
    exe, x = Executor(CPUPlace()), np.ones((40, 40), np.float32)
    return [exe.run(prog, feed={"x": x}, fetch_list=["mask"], scope=Scope())[0]
            for _ in range(runs)]


def test_program_seed_gives_a_reproducible_sequence_of_masks():
    a = _masks(_program_dropout(2024), 3)
    b = _masks(_program_dropout(2024), 3)
    for m1, m2 in zip(a, b):
        np.testing.assert_array_equal(m1, m2)   # the same sequence from a fresh executor
    assert (a[0] != a[1]).any()                  # ... of different masks, step after step
    c = _masks(_program_dropout(2025), 1)
    assert (a[0] != c[0]).any()


def test_no_seed_is_not_reproducible():
    a, b = _masks(_program_dropout(0), 1)[0], _masks(_program_dropout(0), 1)[0]
    assert (a != b).any()


@pytest.mark.parametrize("which", ["strided", "readonly"])
def test_kernel_strided_and_readonly(kernel, variants, which):
    x = np.random.default_rng(4).standard_normal((6, 5))
    attrs = {"fix_seed": True, "seed": 3}
    want = kernel("dropout", attrs, "float64")(x)
    got = kernel("dropout", attrs, "float64")(variants(x)[which])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("x, seed, error", [
    (np.ones(3, np.int32), None, TypeError),
    (np.ones(3, np.float16), None, TypeError),
    (np.ones(3, np.float32), np.array([1, 2], np.int32), ValueError),
    (np.ones(3, np.float32), np.array([1.5]), ValueError),
])
def test_kernel_rejects_bad_inputs(kernel, x, seed, error):
    with pytest.raises(error, match="dropout"):
        kernel("dropout")(x, seed)


def test_out_of_range_probability_is_rejected_by_the_maker(kernel):
    with pytest.raises(ValueError, match="dropout_prob"):
        kernel("dropout", {"dropout_prob": 1.5})


def test_negative_seeds_are_usable(kernel):
    out, mask = kernel("dropout", {"fix_seed": True, "seed": -7})(np.ones(10, np.float32))
    assert mask.shape == (10,)
    out, mask = kernel("dropout")(np.ones(10, np.float32), np.array([-3], np.int32))
    assert mask.shape == (10,)


# ---------------------------------------------------------------- gradient
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("p", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("is_test", [False, True])
def test_gradient_matches_finite_differences(impl, p, is_test):
    # fix_seed: every run (the forward ones of the differences too) drops the same elements.
    x = np.random.default_rng(1).standard_normal((4, 5))
    check_grad("dropout", {"X": x}, wrt=["X"],
               attrs={"dropout_prob": p, "dropout_implementation": impl, "is_test": is_test,
                      "fix_seed": True, "seed": 7})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("is_test", [False, True])
def test_grad_kernel_matches_reference(check, dtype, impl, is_test):
    rng = np.random.default_rng(2)
    mask = (rng.random((3, 7)) > 0.3).astype(np.uint8)
    attrs = {"dropout_prob": 0.3, "dropout_implementation": impl, "is_test": is_test}
    check("dropout_grad", {"Out@GRAD": rng.standard_normal((3, 7)).astype(dtype),
                           "Mask": mask}, attrs)


def test_grad_is_the_mask_times_the_scale(kernel):
    g, mask = np.full((2, 2), 3.0), np.array([[1, 0], [0, 1]], np.uint8)
    attrs = {"dropout_prob": 0.25, "dropout_implementation": "upscale_in_train"}
    (dx,) = kernel("dropout_grad", attrs, "float64")(g, mask)
    np.testing.assert_allclose(dx, [[4.0, 0.0], [0.0, 4.0]])
    (dx,) = kernel("dropout_grad", {"dropout_prob": 0.25}, "float64")(g, mask)
    np.testing.assert_allclose(dx, [[3.0, 0.0], [0.0, 3.0]])


@pytest.mark.parametrize("dout, mask, error, match", [
    (np.ones((2, 3)), np.ones((2, 2), np.uint8), ValueError, r"Mask\[2, 2\] must have the shape"),
    (np.ones((2, 3)), np.ones((2, 3), np.int32), TypeError, r"Mask has dtype int32"),
    (np.ones((2, 3), np.int64), np.ones((2, 3), np.uint8), TypeError, r"Out@GRAD has dtype"),
])
def test_grad_kernel_rejects_bad_inputs(kernel, dout, mask, error, match):
    with pytest.raises(error, match="dropout_grad: " + match):
        kernel("dropout_grad", {}, "float64")(dout, mask)
