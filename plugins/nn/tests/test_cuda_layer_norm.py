"""layer_norm / layer_norm_grad on CUDAPlace (Numba's simulator without a GPU) against the CPU
kernel: begin_norm_axis variants, rows longer than a block, absent Scale/Bias, only some
gradients wanted, empty X and the refusals. Shapes stay tiny: the simulator runs each thread in
Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op
from headrace.testing.parity import same_on_cpu_and_cuda as _both

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)


@pytest.mark.parametrize("shape,axis,params,dtype", [
    ((2, 3, 5), 1, "both", "float32"), ((2, 3, 5), 2, "both", "float64"),
    ((3, 70), 1, "both", "float32"),           # a row longer than a block
    ((2, 3, 4), 1, "scale", "float32"), ((4, 5), 1, "bias", "float64"),
    ((4, 5), 1, "none", "float32")])
def test_layer_norm_like_the_cpu(shape, axis, params, dtype):
    rng = np.random.default_rng(0)
    right = int(np.prod(shape[axis:]))
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    ins = {"X": x,
           "Scale": rng.uniform(0.5, 1.5, right).astype(dtype) if params in ("both", "scale")
           else None,
           "Bias": rng.standard_normal(right).astype(dtype) if params in ("both", "bias")
           else None}
    attrs = {"begin_norm_axis": axis, "epsilon": 1e-5}
    fwd = _both("layer_norm", ins, ["Y", "Mean", "Variance"], attrs)
    dy = rng.standard_normal(shape).astype(dtype)
    slots = ["X@GRAD"] + (["Scale@GRAD"] if ins["Scale"] is not None else []) \
        + (["Bias@GRAD"] if ins["Bias"] is not None else [])
    _both("layer_norm_grad", dict(ins, Mean=fwd["Mean"], Variance=fwd["Variance"],
                                  **{"Y@GRAD": dy}), slots, attrs)


def test_only_the_parameter_gradients():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4)).astype("float32")
    ins = {"X": x, "Scale": np.ones(4, "float32"), "Bias": np.zeros(4, "float32")}
    attrs = {"begin_norm_axis": 1, "epsilon": 1e-5}
    fwd = _both("layer_norm", ins, ["Y", "Mean", "Variance"], attrs)
    _both("layer_norm_grad", dict(ins, Mean=fwd["Mean"], Variance=fwd["Variance"],
                                  **{"Y@GRAD": x}), ["Scale@GRAD"], attrs)


def test_a_bad_axis_is_refused():
    x = np.zeros((2, 3), "float32")
    for place in (CPU, GPU):
        with pytest.raises(Exception, match="begin_norm_axis"):
            run_op("layer_norm", {"X": x}, ["Y"], {"begin_norm_axis": 2, "epsilon": 1e-5},
                   place)
