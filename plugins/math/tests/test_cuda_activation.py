"""Edge cases of the math plugin's CUDA activations (the reference samples run in
tests/test_cuda_ops.py): empty tensors and sigmoid's overflow-free split on the sign."""
import numpy as np
import pytest

pytestmark = pytest.mark.cuda
cuda = pytest.importorskip("numba.cuda")

from headrace_math.kernels.cuda.activation import KERNELS  # noqa: E402
from headrace_math.reference.activation import FUNCS  # noqa: E402

_BY_TYPE = {op_type: cls for op_type, cls, _ in KERNELS}


@pytest.mark.parametrize("op_type", sorted(_BY_TYPE))
def test_empty_tensor_keeps_its_shape(op_type):
    (out,) = _BY_TYPE[op_type]({}, None)(cuda.to_device(np.zeros((0, 3), np.float32)))
    assert out.shape == (0, 3) and out.dtype == np.float32


@pytest.mark.parametrize("op_type", sorted(_BY_TYPE))
def test_large_magnitudes_match_the_reference(op_type):
    x = np.array([[-800.0, -30.0, 0.0], [1e-3, 30.0, 700.0]])
    (out,) = _BY_TYPE[op_type]({}, None)(cuda.to_device(x))
    np.testing.assert_allclose(out.copy_to_host(), FUNCS[op_type](x), rtol=1e-12)
