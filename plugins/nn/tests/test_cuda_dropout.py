"""dropout/dropout_grad on CUDAPlace (Numba's simulator without a GPU). The masks come from
another generator than the CPU kernel's, so training mode is checked by its law (the kept
fraction, kept values scaled, Mask agreeing with Out), fix_seed/Seed repeating a mask, a seeded
program reproducing its sequence across executors with a new mask each step; test mode and the
gradient (deterministic given the Mask) equal the CPU kernel's. Shapes stay small."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime import Executor, Scope
from headrace.testing import run_op

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)
rng = np.random.default_rng(0)
X = rng.standard_normal((40, 25)).astype("float32") + 3.0   # never 0: kept means nonzero


def dropout(attrs, place=GPU, x=X, seed=None):
    inputs = {"X": x} if seed is None else {"X": x, "Seed": np.array([seed], "int32")}
    out = run_op("dropout", inputs, ["Out", "Mask"], attrs, place)
    return np.asarray(out["Out"][0].numpy()), np.asarray(out["Mask"][0].numpy())


@pytest.mark.parametrize("impl", ["downgrade_in_infer", "upscale_in_train"])
@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_training_law(impl, p):
    out, mask = dropout({"dropout_prob": p, "dropout_implementation": impl, "seed": 4})
    assert mask.dtype == np.uint8 and mask.shape == X.shape and out.dtype == X.dtype
    scale = 1 / (1 - p) if impl == "upscale_in_train" and p < 1 else 1.0
    np.testing.assert_allclose(out[mask == 1], X[mask == 1] * np.float32(scale), rtol=1e-6)
    assert (out[mask == 0] == 0).all()
    assert abs(mask.mean() - (1 - p)) < 0.05


@pytest.mark.parametrize("impl", ["downgrade_in_infer", "upscale_in_train"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_test_mode_as_the_cpu(impl, dtype):
    attrs = {"dropout_prob": 0.35, "dropout_implementation": impl, "is_test": True}
    x = X[:3].astype(dtype)
    cpu, gpu = dropout(attrs, CPU, x), dropout(attrs, GPU, x)
    for c, g in zip(cpu, gpu):
        assert c.dtype == g.dtype
        np.testing.assert_array_equal(g, c)


def test_fix_seed_and_seed_input_repeat_the_mask():
    fixed = {"dropout_prob": 0.5, "fix_seed": True, "seed": 9}
    a, b = dropout(fixed)[1], dropout(fixed)[1]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, dropout({**fixed, "seed": 10})[1])
    s1, s2 = dropout({"dropout_prob": 0.5}, seed=5)[1], dropout({"dropout_prob": 0.5}, seed=5)[1]
    np.testing.assert_array_equal(s1, s2)
    assert not np.array_equal(s1, dropout({"dropout_prob": 0.5}, seed=6)[1])


def _program(program_seed, op_seed=0, fix_seed=False):
    prog = hr.Program()
    prog.random_seed = program_seed
    block = prog.global_block()
    block.create_var(name="x", shape=X.shape, dtype="float32")
    block.append_op("dropout", {"X": "x"}, {"Out": "out", "Mask": "mask"},
                    {"dropout_prob": 0.5, "seed": op_seed, "fix_seed": fix_seed})
    return prog


def _masks(prog, n=3):
    exe = Executor(GPU)
    return [exe.run(prog, feed={"x": X}, fetch_list=["mask"], scope=Scope())[0]
            for _ in range(n)]


@pytest.mark.parametrize("program_seed, op_seed", [(7, 0), (0, 7)])
def test_seeded_sequence_reproduces_and_steps_differ(program_seed, op_seed):
    first, again = _masks(_program(program_seed, op_seed)), _masks(_program(program_seed,
                                                                            op_seed))
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])
    fixed = _masks(_program(program_seed, op_seed, fix_seed=True), 2)
    np.testing.assert_array_equal(fixed[0], fixed[1])


@pytest.mark.parametrize("impl", ["downgrade_in_infer", "upscale_in_train"])
@pytest.mark.parametrize("is_test", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_as_the_cpu(impl, is_test, dtype):
    dy = rng.standard_normal((5, 7)).astype(dtype)
    mask = (rng.random((5, 7)) > 0.4).astype("uint8")
    attrs = {"dropout_prob": 0.4, "dropout_implementation": impl, "is_test": is_test}
    cpu, gpu = [np.asarray(run_op("dropout_grad", {"Out@GRAD": dy, "Mask": mask}, ["X@GRAD"],
                                  attrs, p)["X@GRAD"][0].numpy()) for p in (CPU, GPU)]
    assert gpu.dtype == cpu.dtype
    np.testing.assert_allclose(gpu, cpu, rtol=1e-6 if dtype == "float32" else 1e-12)


def test_empty_and_bad_seed():
    out, mask = dropout({"dropout_prob": 0.5}, x=np.zeros((0, 3), "float32"))
    assert out.shape == mask.shape == (0, 3)
    with pytest.raises(Exception, match="Seed"):
        run_op("dropout", {"X": X, "Seed": np.array([1, 2], "int32")}, ["Out", "Mask"],
               {"dropout_prob": 0.5}, GPU)
