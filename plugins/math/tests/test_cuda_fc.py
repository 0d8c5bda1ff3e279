"""fc on CUDAPlace (Numba's simulator without a GPU) against the NumPy reference: tiny shapes,
with and without Bias and relu, in_num_col_dims 2."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import check_op
from headrace_math.reference.fc import fc as reference

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("xs, ws, n, act, bias", [((3, 5), (5, 17), 1, "relu", True),
                                                  ((2, 2, 3), (3, 4), 2, "", True),
                                                  ((2, 3), (3, 2), 1, "relu", False)])
def test_cuda_fc(xs, ws, n, act, bias):
    rng = np.random.default_rng(1)
    inputs = {"Input": rng.standard_normal(xs).astype("float32"),
              "W": rng.standard_normal(ws).astype("float32")}
    if bias:
        inputs["Bias"] = rng.standard_normal(ws[1]).astype("float32")
    attrs = {"in_num_col_dims": n, "activation_type": act}
    check_op("fc", inputs, reference(inputs, attrs), attrs=attrs,
             places=[hr.CPUPlace(), hr.CUDAPlace(0)])
