"""The tensor plugin's selection kernels on CUDAPlace (Numba's simulator without a GPU) against
their CPU twins: gather/gather_nd (repeated and bad indices, gradients accumulating), scatter
(overwrite and add, repeated ids), pad, shape, one_hot_v2, label_smooth, where, lod_reset.
A bad index is raised from the device flag at the end of the run, with the CPU kernel's
message. Shapes stay tiny: the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime.tensor import Tensor
from headrace.testing.optest import run_op

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)


def _rand(shape, dtype="float64", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def same(op, inputs, slots, attrs=None):
    want = run_op(op, inputs, slots, attrs, CPU)
    got = run_op(op, inputs, slots, attrs, GPU)
    for slot in slots:
        for w, g in zip(want[slot], got[slot]):
            assert g.lod == w.lod, (op, slot, g.lod, w.lod)
            w, g = np.asarray(w.numpy()), np.asarray(g.numpy())
            assert g.dtype == w.dtype and g.shape == w.shape, (op, slot, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-12, err_msg=f"{op} {slot}")
    return got


def same_error(op, inputs, slots, attrs, match):
    messages = []
    for place in (CPU, GPU):
        with pytest.raises(Exception, match=match) as e:
            run_op(op, inputs, slots, attrs, place)
        messages.append(str(e.value).split("\n")[0])
    assert messages[0] == messages[1]


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("index", [np.array([2, 0, 2], "int64"), np.array([[1], [1]], "int32"),
                                   np.array(1, "int64")])
def test_gather(axis, index):
    x = _rand((3, 3, 2))
    out = same("gather", {"X": x, "Index": index}, ["Out"], {"axis": axis})["Out"][0].numpy()
    same("gather_grad", {"X": x, "Index": index, "Out@GRAD": _rand(out.shape, seed=1)},
         ["X@GRAD"], {"axis": axis})


def test_gather_bad_index():
    x = _rand((3, 2))
    same_error("gather", {"X": x, "Index": np.array([0, 3, -1], "int64")}, ["Out"],
               {"axis": 0}, "holds 3 at")


@pytest.mark.parametrize("index", [np.array([[0, 1], [2, 0], [0, 1]], "int64"),
                                   np.array([[2], [0]], "int64"), np.zeros((2, 0), "int64")])
def test_gather_nd(index):
    x = _rand((3, 2, 2), "float32")
    out = same("gather_nd", {"X": x, "Index": index}, ["Out"])["Out"][0].numpy()
    same("gather_nd_grad", {"X": x, "Index": index, "Out@GRAD": _rand(out.shape, "float32")},
         ["X@GRAD"])


def test_gather_nd_bad_index():
    same_error("gather_nd", {"X": _rand((3, 2)), "Index": np.array([[0, 1], [1, 2]], "int64")},
               ["Out"], {}, "holds 2 at")


@pytest.mark.parametrize("overwrite", [True, False])
def test_scatter_repeated_ids(overwrite):
    x = _rand((4, 3))
    ids = np.array([1, 3, 1], "int64")
    u = _rand((3, 3), seed=2)
    same("scatter", {"X": x, "Ids": ids, "Updates": u}, ["Out"], {"overwrite": overwrite})
    same("scatter_grad", {"Ids": ids, "Updates": u, "Out@GRAD": _rand((4, 3), seed=3)},
         ["X@GRAD", "Updates@GRAD"], {"overwrite": overwrite})
    same_error("scatter", {"X": x, "Ids": np.array([0, 4, 1], "int64"), "Updates": u}, ["Out"],
               {"overwrite": overwrite}, "holds 4 at")


def test_pad():
    x = _rand((2, 3))
    same("pad", {"X": x}, ["Out"], {"paddings": [1, 0, 2, 1], "pad_value": 1.5})
    same("pad", {"X": x.astype("int32")}, ["Out"], {"paddings": [0, 1, 1, 1], "pad_value": -2.7})
    same("pad_grad", {"Out@GRAD": _rand((4, 5))}, ["X@GRAD"], {"paddings": [1, 1, 0, 2]})


def test_shape():
    same("shape", {"Input": _rand((2, 0, 3))}, ["Out"])
    same("shape", {"Input": np.array(1.0)}, ["Out"])


@pytest.mark.parametrize("allow", [True, False])
def test_one_hot(allow):
    ids = np.array([[0], [3], [2]], "int64")
    attrs = {"depth": 4, "allow_out_of_range": allow, "dtype": 5}
    same("one_hot_v2", {"X": ids}, ["Out"], attrs)
    bad = {"X": np.array([1, 5, 0], "int32")}
    if allow:
        same("one_hot_v2", bad, ["Out"], attrs)
    else:
        same_error("one_hot_v2", bad, ["Out"], attrs, "holds 5 at")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_label_smooth(dtype):
    x = np.eye(4, dtype=dtype)[[0, 2, 3]]
    same("label_smooth", {"X": x}, ["Out"], {"epsilon": 0.1})
    prior = np.array([0.1, 0.2, 0.3, 0.4], dtype)
    same("label_smooth", {"X": x, "PriorDist": prior}, ["Out"], {"epsilon": 0.2})
    same("label_smooth_grad", {"Out@GRAD": _rand((3, 4), dtype)}, ["X@GRAD"], {"epsilon": 0.1})


def test_where():
    c = _rand((2, 3)) > 0
    x, y = _rand((2, 3), seed=1), _rand((2, 3), seed=2)
    same("where", {"Condition": c, "X": x, "Y": y}, ["Out"])
    same("where", {"Condition": c, "X": x > 0, "Y": y > 0}, ["Out"])
    same("where_grad", {"Condition": c, "X": x, "Y": y, "Out@GRAD": _rand((2, 3), seed=3)},
         ["X@GRAD", "Y@GRAD"])


def test_lod_reset():
    x = Tensor(_rand((6, 2)), [[0, 3, 6]])
    same("lod_reset", {"X": x}, ["Out"], {"target_lod": [0, 2, 6]})
    same("lod_reset", {"X": Tensor(x.numpy(), [[0, 6]])}, ["Out"],
         {"target_lod": list(range(7)), "append": True})
    same("lod_reset", {"X": x, "Y": np.array([0, 4, 6], "int32")}, ["Out"])
    same("lod_reset", {"X": x, "Y": Tensor(_rand((6, 1)), [[0, 1, 6]])}, ["Out"])
