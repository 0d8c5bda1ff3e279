"""group_norm, instance_norm, norm (l2_normalize) and their gradients on CUDAPlace (Numba's
simulator without a GPU) against the CPU kernels: with and without Scale/Bias, rows longer than
a block, axes, empty positions and the refusals. Shapes stay tiny: the simulator runs each thread
in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op
from headrace.testing.parity import same_on_cpu_and_cuda as _both

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)


def _params(rng, C, dtype, which):
    return {"Scale": rng.uniform(0.5, 1.5, C).astype(dtype) if which in ("both", "scale")
            else None,
            "Bias": rng.standard_normal(C).astype(dtype) if which in ("both", "bias")
            else None}


def _grad_slots(ins):
    return ["X@GRAD"] + [s + "@GRAD" for s in ("Scale", "Bias") if ins[s] is not None]


@pytest.mark.parametrize("shape,groups,which,dtype", [
    ((2, 4, 3, 3), 2, "both", "float32"), ((2, 6, 5), 3, "scale", "float64"),
    ((2, 4, 20), 1, "none", "float32"),          # a row of 80 values: more than a block
    ((2, 4), 4, "bias", "float32")])              # no positions: rows of one value
def test_group_norm_like_the_cpu(shape, groups, which, dtype):
    rng = np.random.default_rng(0)
    ins = {"X": (rng.standard_normal(shape) * 2 + 1).astype(dtype),
           **_params(rng, shape[1], dtype, which)}
    attrs = {"groups": groups, "epsilon": 1e-5}
    fwd = _both("group_norm", ins, ["Y", "Mean", "Variance"], attrs)
    dy = rng.standard_normal(shape).astype(dtype)
    _both("group_norm_grad", dict(ins, Mean=fwd["Mean"], Variance=fwd["Variance"],
                                  **{"Y@GRAD": dy}), _grad_slots(ins), attrs)


@pytest.mark.parametrize("shape,which,dtype", [
    ((2, 3, 4, 4), "both", "float32"), ((2, 3, 5), "none", "float64"),
    ((1, 2, 70), "scale", "float32")])
def test_instance_norm_like_the_cpu(shape, which, dtype):
    rng = np.random.default_rng(1)
    ins = {"X": (rng.standard_normal(shape) * 2 + 1).astype(dtype),
           **_params(rng, shape[1], dtype, which)}
    attrs = {"epsilon": 1e-5}
    fwd = _both("instance_norm", ins, ["Y", "SavedMean", "SavedVariance"], attrs)
    dy = rng.standard_normal(shape).astype(dtype)
    _both("instance_norm_grad", dict(ins, SavedMean=fwd["SavedMean"],
                                     SavedVariance=fwd["SavedVariance"], **{"Y@GRAD": dy}),
          _grad_slots(ins), attrs)


@pytest.mark.parametrize("shape,axis,dtype", [((2, 3, 4), 1, "float32"),
                                              ((2, 3, 4), -1, "float64"),
                                              ((3, 70), 1, "float32"), ((4,), 0, "float32")])
def test_norm_like_the_cpu(shape, axis, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    attrs = {"axis": axis, "epsilon": 1e-10}
    fwd = _both("norm", {"X": x}, ["Out", "Norm"], attrs)
    dy = rng.standard_normal(shape).astype(dtype)
    _both("norm_grad", {"X": x, "Norm": fwd["Norm"], "Out@GRAD": dy}, ["X@GRAD"], attrs)


def test_refusals_as_the_cpu():
    x = np.zeros((2, 3, 4), "float32")
    for place in (CPU, GPU):
        with pytest.raises(Exception, match="groups"):
            run_op("group_norm", {"X": x}, ["Y"], {"groups": 2, "epsilon": 1e-5}, place)
        with pytest.raises(Exception, match="axis"):
            run_op("norm", {"X": x}, ["Out"], {"axis": 3, "epsilon": 1e-5}, place)
