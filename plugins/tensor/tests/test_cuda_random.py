"""uniform_random/gaussian_random on CUDAPlace (Numba's simulator without a GPU): the draws can't
equal NumPy's, so bounds and moments of a sample, the op's or the program's seed reproducing a
sequence across executors, new draws at every run, diag, shape tensors; and cast, assign_value,
fill_constant_batch_size_like against the CPU kernels. Samples stay small (Python threads)."""
import numpy as np
import pytest

import headrace as hr
from headrace import dtypes as dt
from headrace.runtime import Tensor
from headrace.testing import run_op
from headrace_tensor.reference._random_runs import (check_seeded_sequences, check_shape_tensors,
                                                    random_program)
from headrace_tensor.reference._random_runs import runs as runs_on

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)
N = 2000


def draw(op_type, attrs, inputs=None):
    (t,) = run_op(op_type, inputs or {}, ["Out"], attrs, GPU)["Out"]
    return np.asarray(t.numpy())


def runs(prog, n=3):
    """"out" of ``n`` runs of ``prog`` by one new executor on the device."""
    return runs_on(prog, n, place=GPU)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_uniform_bounds_and_moments(dtype):
    lo, hi = -2.0, 3.0
    x = draw("uniform_random", {"shape": [N], "min": lo, "max": hi, "seed": 3,
                                "dtype": dt.to_proto(dtype)})
    assert x.dtype == np.dtype(dtype) and x.shape == (N,)
    assert x.min() >= lo and x.max() < hi
    assert abs(x.astype("float64").mean() - 0.5) < 0.15
    assert abs(x.astype("float64").var() - 25 / 12) < 0.3
    assert len(np.unique(x)) > N // 2


def test_uniform_diag():
    x = draw("uniform_random", {"shape": [4, 5], "seed": 2, "diag_num": 4, "diag_step": 5,
                                "diag_val": 9.0})
    assert all(x.reshape(-1)[i * 6] == 9.0 for i in range(4))
    with pytest.raises(Exception, match="past the end"):
        draw("uniform_random", {"shape": [4], "diag_num": 3, "diag_step": 5})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gaussian_moments(dtype):
    x = draw("gaussian_random", {"shape": [N], "mean": 1.5, "std": 2.0, "seed": 5,
                                 "dtype": dt.to_proto(dtype)})
    assert x.dtype == np.dtype(dtype)
    assert abs(x.mean() - 1.5) < 0.2 and abs(x.std() - 2.0) < 0.2
    assert (np.abs(x - 1.5) > 2.0).mean() == pytest.approx(0.317, abs=0.05)


@pytest.mark.parametrize("op_type", ["uniform_random", "gaussian_random"])
@pytest.mark.parametrize("op_seed, program_seed", [(7, 0), (0, 7)])
def test_seeded_sequences_reproduce_and_steps_differ(op_type, op_seed, program_seed):
    first = check_seeded_sequences(runs, op_type, op_seed, program_seed)
    other = runs(random_program(op_type, op_seed + 1, program_seed), 1)[0]
    assert not np.array_equal(first[0], other)


def test_unseeded_is_nondeterministic():
    prog = random_program("uniform_random")
    assert not np.array_equal(runs(prog, 1)[0], runs(prog, 1)[0])


def test_random_shape_tensors():
    check_shape_tensors(draw)


def same(op, inputs, attrs):
    cpu, gpu = [np.asarray(run_op(op, inputs, ["Out"], attrs, p)["Out"][0].numpy())
                for p in (CPU, GPU)]
    assert gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    np.testing.assert_array_equal(gpu, cpu)


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float64", "bool"),
                                     ("bool", "float32"), ("int64", "int8"),
                                     ("float32", "float16"), ("int32", "int32"),
                                     ("float16", "bool")])
def test_cast_as_the_cpu(src, dst):
    x = np.array([[-2.7, 0.0, 1.5], [3.9, -0.4, 100.0]]).astype(src)
    same("cast", {"X": x}, {"in_dtype": dt.to_proto(src), "out_dtype": dt.to_proto(dst)})


@pytest.mark.parametrize("dtype,key,values", [("float32", "fp32_values", [1.5, -2, 3, 4]),
                                              ("int64", "int64_values", [1, 2, 3, 2**40]),
                                              ("bool", "bool_values", [True, False, True, False])])
def test_assign_value_as_the_cpu(dtype, key, values):
    same("assign_value", {}, {"shape": [2, 2], "dtype": dt.to_proto(dtype), key: values})


def test_fill_constant_batch_size_like_with_lod():
    x = Tensor(np.zeros((5, 3), "float32"), [[0, 2, 5]])
    attrs = {"shape": [-1, 4], "dtype": dt.to_proto("float32"), "value": 2.5,
             "input_dim_idx": 0, "output_dim_idx": 0}
    same("fill_constant_batch_size_like", {"Input": x}, attrs)
    same("fill_constant_batch_size_like", {"Input": np.zeros((3, 6), "float32")},
         {**attrs, "input_dim_idx": 1, "output_dim_idx": 1, "shape": [2, -1],
          "dtype": dt.to_proto("int64"), "str_value": "9007199254740993"})
