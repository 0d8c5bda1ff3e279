"""sequence_slice, sequence_reshape, sequence_enumerate, sequence_concat and sequence_scatter
(with their gradients) on CUDAPlace (Numba's simulator without a GPU) against the CPU kernels,
over tiny LoD batches with empty sequences, and the CPU kernels' errors. Shapes stay tiny: the
simulator runs each thread in Python."""
from functools import partial

import numpy as np
import pytest

from headrace.runtime import Tensor
from headrace.testing.parity import cuda_refuses, same_on_cpu_and_cuda

pytestmark = pytest.mark.cuda


_same = partial(same_on_cpu_and_cuda, tol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sequence_slice_and_grad(dtype):
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((9, 2, 2)).astype(dtype), [[0, 2, 4], [0, 3, 3, 8, 9]])
    offset = np.array([[1], [0], [2], [0]], "int64")
    length = np.array([[2], [0], [3], [1]], "int64")
    ins = {"X": x, "Offset": offset, "Length": length}
    out = _same("sequence_slice", ins, ["Out"])["Out"]
    g = rng.standard_normal(out.shape).astype(dtype)
    _same("sequence_slice_grad", {**ins, "Out@GRAD": g}, ["X@GRAD"])
    cuda_refuses("sequence_slice", {**ins, "Length": np.array([[2], [1], [3], [1]])}, ["Out"],
                None, "sequence 1 has 0 rows; Offset 0 and Length 1 do not fit")


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_sequence_reshape_and_grad(dtype):
    x = Tensor(np.arange(24).reshape(6, 4).astype(dtype), [[0, 2, 2, 6]])
    out = _same("sequence_reshape", {"X": x}, ["Out"], {"new_dim": 8})["Out"]
    _same("sequence_reshape", {"X": x}, ["Out"], {"new_dim": 4})
    _same("sequence_reshape_grad", {"X": x, "Out@GRAD": out}, ["X@GRAD"], {"new_dim": 8})
    cuda_refuses("sequence_reshape", {"X": x}, ["Out"], {"new_dim": 3},
                "sequence 0 of X has 2 rows of width 4 = 8 values")


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_sequence_enumerate(dtype):
    x = Tensor(np.arange(1, 8).reshape(7, 1).astype(dtype), [[0, 3, 3, 4, 7]])
    _same("sequence_enumerate", {"X": x}, ["Out"], {"win_size": 3, "pad_value": -1})
    _same("sequence_enumerate", {"X": Tensor(np.zeros((0, 1), dtype), [[0, 0]])}, ["Out"],
          {"win_size": 2, "pad_value": 0})


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_sequence_concat_and_grad(dtype):
    rng = np.random.default_rng(1)
    xs = [Tensor((rng.standard_normal((4, 2)) * 9).astype(dtype), [[0, 1, 1, 4]]),
          Tensor((rng.standard_normal((3, 2)) * 9).astype(dtype), [[0, 0, 2, 3]]),
          Tensor((rng.standard_normal((0, 2)) * 9).astype(dtype), [[0, 0, 0, 0]])]
    out = _same("sequence_concat", {"X": xs}, ["Out"])["Out"]
    g = (rng.standard_normal(out.shape) * 9).astype(dtype)
    _same("sequence_concat_grad", {"X": xs, "Out@GRAD": g}, ["X@GRAD"], counts={"X@GRAD": 3})
    cuda_refuses("sequence_concat", {"X": [xs[0], Tensor(xs[1].data, [[0, 3]])]}, ["Out"], None,
                "X\\[1\\] has 1 sequences, X\\[0\\] 3")


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_sequence_scatter_and_grad(dtype):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 4)) * 9).astype(dtype)
    lod = [[0, 3, 3, 5]]
    ids = Tensor(np.array([[1], [3], [1], [0], [0]], "int64"), lod)   # repeated ids add up
    upd = Tensor((rng.standard_normal((5, 1)) * 9).astype(dtype), lod)
    _same("sequence_scatter", {"X": x, "Ids": ids, "Updates": upd}, ["Out"])
    g = (rng.standard_normal((3, 4)) * 9).astype(dtype)
    _same("sequence_scatter_grad", {"Ids": ids, "Updates": upd, "Out@GRAD": g},
          ["X@GRAD", "Updates@GRAD"])
    bad = Tensor(np.array([[1], [4], [1], [0], [0]], "int64"), lod)
    cuda_refuses("sequence_scatter", {"X": x, "Ids": bad, "Updates": upd}, ["Out"], None,
                r"Ids\[1\] = 4 \(sequence 0\) is not a column of a row of X, which has 4")


def test_sequence_scatter_grad_checks_ids_when_only_x_grad_is_wanted():
    from numba import cuda

    from headrace_nn.kernels.cuda.sequence_scatter import SequenceScatterGrad

    class OnlyX:
        location = None

        def wants(self, slot):
            return slot == "X@GRAD"
    lod = [[0, 2]]
    k = SequenceScatterGrad({}, OnlyX())
    ids = Tensor(cuda.to_device(np.array([[0], [5]], "int64")), lod)
    upd = Tensor(cuda.to_device(np.ones((2, 1))), lod)
    with pytest.raises(ValueError, match=r"Ids\[1\] = 5"):
        k(ids, upd, Tensor(cuda.to_device(np.ones((1, 3))), []))
