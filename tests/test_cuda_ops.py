"""Every op with a CUDA kernel, checked on CUDAPlace against its NumPy reference (issue 11):
the op's reference samples (reference/<module>.py, the same the CPU fuzz test starts from),
run on the device and compared output by output, float32 and float64. A kernel added for the
CUDA device is covered here without a test of its own; its family's test file adds the edge
cases. Numba's CUDA simulator runs these in the cudasim environment (small shapes keep it
fast), a GPU in the gpu environment."""
import numpy as np
import pytest

import headrace as hr
from headrace.errors import KernelNotFoundError
from headrace.ops import default_registry
from headrace.runtime import Tensor
from headrace.testing import load_references, run_op
from headrace.testing.optest import IN_PLACE_OUTPUTS

pytestmark = pytest.mark.cuda

REGISTRY = default_registry()
REFS, SAMPLES = load_references()


def _has_cuda(op_type, dtype):
    try:
        REGISTRY.kernel(op_type, "cuda", dtype)
    except KernelNotFoundError:
        return False
    return True


def _cases():
    out = []
    for t in sorted(t for t in SAMPLES if t in REFS and t in REGISTRY):
        for dtype in ("float32", "float64"):
            if REGISTRY.kernels_for(t).get("cuda") is not None:
                out.append((t, dtype))
    return out


def _kernel_dtype(inputs, dtype):
    """The dtype the executor picks the kernel by: the first floating input's (an integer Label
    or Ids slot may come first), else the first input's, else the sample's dtype."""
    arrays = [np.asarray(getattr(a, "data", a)) for v in inputs.values()
              for a in (v if isinstance(v, list) else [v])]
    floating = [a.dtype.name for a in arrays if a.dtype.kind == "f"]
    if floating:
        return floating[0]
    return arrays[0].dtype.name if arrays else dtype


def _filled(opdef, attrs):
    return {**{n: a.default for n, a in opdef.attrs.items()}, **attrs}


# Ops whose reference replays NumPy's generator from a seed: the CUDA kernel draws from another
# generator (Numba's xoroshiro128p), so only shapes and dtypes compare here; the family's test
# checks the statistics (plugins/nn/tests/test_cuda_dropout.py).
NUMPY_DRAWS = {"dropout"}


@pytest.mark.parametrize("op_type, dtype", _cases())
def test_the_cuda_kernel_matches_the_reference(op_type, dtype):
    inputs, attrs = SAMPLES[op_type](np.random.default_rng(7), dtype)
    inputs = {s: v for s, v in inputs.items() if v is not None}
    kernel_dtype = _kernel_dtype(inputs, dtype)
    if not _has_cuda(op_type, kernel_dtype):
        pytest.skip(f"{op_type} has no CUDA kernel for {kernel_dtype} (its CPU one does)")
    expected = REFS[op_type](dict(inputs), _filled(REGISTRY.get(op_type), attrs))
    counts = {s: len(v) for s, v in expected.items() if isinstance(v, list)}
    got = run_op(op_type, inputs, list(expected), attrs, hr.CUDAPlace(0),
                 output_counts=counts, same_var=IN_PLACE_OUTPUTS.get(op_type))
    tol = 1e-4 if dtype == "float32" else 1e-10
    for slot, exp in expected.items():
        if exp is None:
            continue   # random outputs: the family's own test checks their statistics
        for e, g in zip(exp if isinstance(exp, list) else [exp], got[slot]):
            e = np.asarray(e.data if isinstance(e, Tensor) else e)
            g = np.asarray(g.numpy())
            assert g.shape == e.shape and g.dtype == e.dtype, \
                f"{op_type}.{slot}: {g.dtype}{list(g.shape)} vs reference {e.dtype}{list(e.shape)}"
            if op_type in NUMPY_DRAWS:
                continue
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=tol,
                                       atol=tol, equal_nan=True, err_msg=f"{op_type}.{slot}")
