"""The LoD row-moving sequence ops on CUDAPlace (Numba's simulator without a GPU) against the CPU
kernels: sequence_expand / sequence_expand_as, sequence_pad / sequence_unpad (with their
gradients), sequence_reverse and sequence_mask, over tiny LoD batches with empty sequences, and
the CPU kernels' errors. Shapes stay tiny: the simulator runs each thread in Python."""
from functools import partial

import numpy as np
import pytest

from headrace.runtime import Tensor
from headrace.testing.parity import cuda_refuses, same_on_cpu_and_cuda

pytestmark = pytest.mark.cuda


_same = partial(same_on_cpu_and_cuda, tol=1e-6)


@pytest.mark.parametrize("x_lod, y_lod, ref_level", [
    ([[0, 2, 2, 5]], [[0, 2, 3, 3], [0, 1, 3, 6]], 0),   # an empty entry, 0 repeats
    ([], [[0, 3, 3, 4, 5]], -1),                                    # X rows are the entries
    ([[0, 1, 3, 5]], [[0, 0, 2, 5]], 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sequence_expand_and_grad(x_lod, y_lod, ref_level, dtype):
    rng = np.random.default_rng(0)
    rows = x_lod[0][-1] if x_lod else 4
    x = Tensor(rng.standard_normal((rows, 2, 3)).astype(dtype), x_lod)
    y = Tensor(np.zeros((y_lod[-1][-1], 1), dtype), y_lod)
    attrs = {"ref_level": ref_level}
    out = _same("sequence_expand", {"X": x, "Y": y}, ["Out"], attrs)["Out"]
    g = rng.standard_normal(out.shape).astype(dtype)
    _same("sequence_expand_grad", {"X": x, "Y": y, "Out@GRAD": g}, ["X@GRAD"], attrs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sequence_expand_as_and_grad(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3)).astype(dtype)
    y = Tensor(np.zeros((7, 1), dtype), [[0, 3, 3, 7, 7]])
    out = _same("sequence_expand_as", {"X": x, "Y": y}, ["Out"])["Out"]
    g = rng.standard_normal(out.shape).astype(dtype)
    _same("sequence_expand_as_grad", {"X": x, "Y": y, "Out@GRAD": g}, ["X@GRAD"])


def test_sequence_expand_errors_match_the_cpu():
    x = Tensor(np.ones((3, 2)), [[0, 1, 3]])
    y = Tensor(np.ones((4, 1)), [[0, 1, 2, 4]])     # 3 sequences for X's 2 entries
    cuda_refuses("sequence_expand", {"X": x, "Y": y}, ["Out"], {"ref_level": 0},
                "X has 2 entries, Y's LoD level 0 3 sequences")
    cuda_refuses("sequence_expand", {"X": x, "Y": Tensor(np.ones((4, 1)), [[0, 2, 4]])},
                ["Out"], {"ref_level": 3}, "ref_level 3 is not a LoD level")


@pytest.mark.parametrize("padded", [-1, 5])
@pytest.mark.parametrize("pad_shape", [(1,), (2, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sequence_pad_unpad_and_grads(padded, pad_shape, dtype):
    rng = np.random.default_rng(2)
    lod = [[0, 3, 3, 4, 8, 8]]
    x = Tensor(rng.standard_normal((8, 2, 3)).astype(dtype), lod)
    pad = rng.standard_normal(pad_shape).astype(dtype)
    attrs = {"padded_length": padded}
    cpu = _same("sequence_pad", {"X": x, "PadValue": pad}, ["Out", "Length"], attrs)
    out, length = cpu["Out"], cpu["Length"]
    g = rng.standard_normal(out.shape).astype(dtype)
    _same("sequence_pad_grad", {"X": x, "Out@GRAD": g}, ["X@GRAD"], attrs)
    _same("sequence_unpad", {"X": out, "Length": length}, ["Out"])
    gu = rng.standard_normal((8, 2, 3)).astype(dtype)
    _same("sequence_unpad_grad", {"X": out, "Length": length.astype("int32"), "Out@GRAD": gu},
          ["X@GRAD"])


def test_sequence_pad_of_no_rows_and_unpad_to_none():
    x = Tensor(np.zeros((0, 2), "float32"), [[0, 0, 0]])
    _same("sequence_pad", {"X": x, "PadValue": np.ones(1, "float32")}, ["Out", "Length"],
          {"padded_length": 2})
    _same("sequence_unpad", {"X": np.ones((2, 3, 2)), "Length": np.zeros(2, "int64")},
          ["Out"])


def test_sequence_pad_unpad_errors_match_the_cpu():
    x = Tensor(np.ones((5, 2)), [[0, 4, 5]])
    cuda_refuses("sequence_pad", {"X": x, "PadValue": np.ones(1)}, ["Out"],
                {"padded_length": 3}, "length 4 does not fit padded_length 3")
    cuda_refuses("sequence_pad", {"X": x, "PadValue": np.ones(3)}, ["Out"],
                {"padded_length": -1}, "one value or one row")
    cuda_refuses("sequence_unpad", {"X": np.ones((2, 3)), "Length": np.array([1, 4])},
                ["Out"], None, r"one length in \[0, 3\]")


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_sequence_reverse(dtype):
    x = (np.random.default_rng(3).standard_normal((9, 2)) > 0).astype(dtype)
    _same("sequence_reverse", {"X": Tensor(x, [[0, 2, 4], [0, 3, 3, 8, 9]])}, ["Y"])
    _same("sequence_reverse", {"X": Tensor(np.zeros((0, 3), dtype), [[0, 0]])}, ["Y"])


@pytest.mark.parametrize("maxlen", [-1, 6])
@pytest.mark.parametrize("ldtype, out_dtype", [("int64", "int64"), ("int32", "float32"),
                                               ("int64", "bool")])
def test_sequence_mask(maxlen, ldtype, out_dtype):
    from headrace import dtypes
    x = np.array([[3, 0], [5, 1], [2, 2]], ldtype)
    _same("sequence_mask", {"X": x}, ["Y"],
          {"maxlen": maxlen, "out_dtype": dtypes.to_proto(out_dtype)})


def test_sequence_mask_width_from_the_tensor_and_errors():
    x = np.array([1, 4, 0], "int64")
    _same("sequence_mask", {"X": x, "MaxLenTensor": np.array([2], "int32")}, ["Y"])
    _same("sequence_mask", {"X": np.zeros((0,), "int64")}, ["Y"])
    cuda_refuses("sequence_mask", {"X": np.array([2, -3], "int64")}, ["Y"], None,
                r"negative length \(-3\)")
    cuda_refuses("sequence_mask", {"X": np.array([2, -3], "int64")}, ["Y"], {"maxlen": 4},
                r"negative length \(-3\)")
