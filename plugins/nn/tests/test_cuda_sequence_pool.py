"""sequence_pool / sequence_softmax and their gradients on CUDAPlace (Numba's simulator without a
GPU) against the CPU kernels: every pool type over tiny LoD batches with empty sequences,
MAX's NaN and tie semantics, more rows than a block's lanes and more columns than its tile,
a bad MaxIndex refused, and the cached device offsets. Shapes stay tiny: the simulator runs
each thread in Python."""
from functools import partial

import numpy as np
import pytest

import headrace as hr
from headrace.runtime import Tensor
from headrace.testing import run_op
from headrace.testing.parity import same_on_cpu_and_cuda

pytestmark = pytest.mark.cuda

POOLS = ["AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"]
LOD = [[0, 3, 3, 4, 9, 9]]          # empty sequences inside and at the end


_same = partial(same_on_cpu_and_cuda, tol=1e-6)


@pytest.mark.parametrize("pooltype", POOLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pool_and_grad_match_the_cpu(pooltype, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((9, 2, 3)).astype(dtype)
    x[5, 1, 2] = x[7, 1, 2] = 9.0                     # a tie: the first row is MaxIndex
    attrs = {"pooltype": pooltype, "pad_value": -2.5}
    cpu = _same("sequence_pool", {"X": Tensor(x, LOD)}, ["Out", "MaxIndex"], attrs)
    dout = rng.standard_normal(cpu["Out"].shape).astype(dtype)
    _same("sequence_pool_grad", {"X": Tensor(x, LOD), "MaxIndex": cpu["MaxIndex"],
                                 "Out@GRAD": dout}, ["X@GRAD"], attrs)


def test_max_nan_semantics_and_long_sequences():
    # 20 columns (more than a block's tile), a 13-row sequence (more than its lanes); NaN first,
    # NaN later, two NaNs (the first is MaxIndex), -inf only.
    x = np.random.default_rng(4).standard_normal((15, 20))
    x[0, 0] = np.nan
    x[6, 1] = np.nan
    x[3, 2] = x[9, 2] = np.nan
    x[:13, 3] = -np.inf
    x[14, 4] = np.nan
    lod = [[0, 13, 13, 15]]
    cpu = _same("sequence_pool", {"X": Tensor(x, lod)}, ["Out", "MaxIndex"],
                   {"pooltype": "MAX"}, tol=0)
    assert cpu["MaxIndex"][0, 2] == 3 and cpu["MaxIndex"][1, 0] == -1


@pytest.mark.parametrize("pooltype", ["MAX", "SUM"])
def test_one_value_per_row_uses_every_lane(pooltype):
    # D = 1: the block's 64 threads are all row lanes; 70 rows wrap around them; ties at
    # rows 5 and 69 (MaxIndex 5), a NaN in the second sequence after its maximum.
    x = np.random.default_rng(6).standard_normal((75, 1)).round(1)
    x[5] = x[69] = 9.0
    x[73] = np.nan
    _same("sequence_pool", {"X": Tensor(x, [[0, 70, 70, 75]])}, ["Out", "MaxIndex"],
          {"pooltype": pooltype}, tol=1e-12)


def test_all_sequences_empty_and_no_rows():
    x = np.zeros((0, 3), "float32")
    _same("sequence_pool", {"X": Tensor(x, [[0, 0, 0]])}, ["Out", "MaxIndex"],
          {"pooltype": "MAX", "pad_value": 1.0})
    dout = np.ones((2, 3), "float32")
    mi = np.full((2, 3), -1, "int32")
    _same("sequence_pool_grad", {"X": Tensor(x, [[0, 0, 0]]), "MaxIndex": mi,
                                 "Out@GRAD": dout}, ["X@GRAD"], {"pooltype": "MAX"})


def test_two_level_lod_keeps_the_outer_level():
    x = np.arange(14, dtype="float64").reshape(7, 2)
    _same("sequence_pool", {"X": Tensor(x, [[0, 2, 4], [0, 3, 3, 5, 7]])}, ["Out"],
          {"pooltype": "SUM"})


def test_a_bad_max_index_is_refused():
    x = np.ones((4, 2))
    mi = np.array([[0, 2], [3, 3]], "int32")          # 2 is not a row of sequence 0 [0, 2)
    with pytest.raises(Exception, match=r"MaxIndex value 2 \(position 1\)"):
        run_op("sequence_pool_grad", {"X": Tensor(x, [[0, 2, 4]]), "MaxIndex": mi,
                                      "Out@GRAD": np.ones((2, 2))}, ["X@GRAD"],
               {"pooltype": "MAX"}, hr.CUDAPlace(0))


def test_a_bad_lod_is_refused():
    from numba import cuda

    from headrace_nn.kernels.cuda.sequence import SequencePool
    x = cuda.to_device(np.ones((3, 1)))
    with pytest.raises(ValueError, match="does not describe its 3 rows"):
        SequencePool({"pooltype": "SUM"})(Tensor(x, [[0, 2, 4]]))


def test_offsets_are_copied_once_per_layout(monkeypatch):
    from numba import cuda

    from headrace_nn.kernels.cuda import _seq
    from headrace_nn.kernels.cuda.sequence import SequencePool
    k = SequencePool({"pooltype": "SUM"})
    x = cuda.to_device(np.ones((4, 2)))
    copies = []
    real = _seq.cuda.to_device
    monkeypatch.setattr(_seq.cuda, "to_device", lambda *a, **kw: copies.append(1) or real(*a, **kw))
    for lod in ([[0, 1, 4]], [[0, 1, 4]], [[0, 4, 4]], [[0, 1, 4]]):
        out = k(Tensor(x, lod))[0]
    assert len(copies) == 2                              # one per layout
    np.testing.assert_allclose(out.data.copy_to_host(), [[1, 1], [3, 3]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sequence_softmax_and_grad_match_the_cpu(dtype):
    rng = np.random.default_rng(5)
    lod = [[0, 2, 2, 72, 73, 73]]        # a sequence longer than a block, empty ones, one row
    x = (rng.standard_normal((73, 1)) * 4).astype(dtype)
    cpu = _same("sequence_softmax", {"X": Tensor(x, lod)}, ["Out"])
    dout = rng.standard_normal((73, 1)).astype(dtype)
    _same("sequence_softmax_grad", {"X": Tensor(x, lod), "Out": Tensor(cpu["Out"], lod),
                                    "Out@GRAD": Tensor(dout, lod)}, ["X@GRAD"])


def test_sequence_softmax_refuses_rows_of_many_values():
    with pytest.raises(Exception, match="one value per row"):
        run_op("sequence_softmax", {"X": Tensor(np.ones((3, 2)), [[0, 3]])}, ["Out"],
               None, hr.CUDAPlace(0))
