"""increment on CUDAPlace (Numba's simulator): the counter stays a device value, each dtype as
the CPU kernel (an integer step truncated), a counter of more than one element refused."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import run_op

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("dtype,step", [("int64", 2.0), ("int32", -1.7), ("float32", 0.5),
                                        ("float64", 1e-3)])
def test_increment_as_the_cpu(dtype, step):
    x = np.array([5], dtype)
    cpu, gpu = [np.asarray(run_op("increment", {"X": x}, ["Out"], {"step": step}, p)["Out"][0]
                           .numpy()) for p in (hr.CPUPlace(), hr.CUDAPlace(0))]
    assert gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    np.testing.assert_array_equal(gpu, cpu)


def test_increment_refuses_more_than_one_element():
    from numba import cuda

    from headrace_control.kernels.cuda.increment import Increment
    with pytest.raises(ValueError, match="one element"):
        Increment({"step": 1.0})(cuda.to_device(np.zeros(2, "int64")))
