"""Device parity, the check CUDA kernel tests share: one op run on the CPU and on CUDAPlace(0)
(a GPU, or Numba's simulator), every output compared with the CPU kernel's."""
import numpy as np

from ..runtime import CPUPlace, CUDAPlace
from .optest import run_op

__all__ = ["DEVICE_TOLERANCES", "same_on_cpu_and_cuda", "cuda_refuses"]

# rtol = atol by dtype where a test gives none: a CUDA kernel sums in another order than the
# CPU's (trees, float64 partial sums), so float results agree to rounding, not to the bit;
# other dtypes must be equal.
DEVICE_TOLERANCES = {"float16": 1e-3, "float32": 2e-6, "float64": 1e-12}


def _run_op(op, inputs, slots, attrs, place, counts):
    return run_op(op, inputs, slots, attrs, place, output_counts=counts)


def same_on_cpu_and_cuda(op, inputs, slots, attrs=None, tol=None, counts=None,
                         equal_nan=True, run=None, atol=None):
    """Run ``op`` on the CPU and on CUDAPlace(0) and assert that both bind the same outputs and
    that every tensor of ``slots`` agrees: dtype, shape, values to ``tol`` (rtol, and atol
    unless ``atol`` is given: a number, or a dict by dtype name; default DEVICE_TOLERANCES)
    and LoD; NaN equals NaN unless ``equal_nan`` is false (NumPy's assert_allclose).

    ``counts``: variables per duplicable output slot (run_op's output_counts). ``run``: what
    runs the op, ``run(op, inputs, slots, attrs, place)`` -> ``{slot: [Tensor, ...]}``
    (default run_op), for an op a one-op program cannot express. Returns the CPU's outputs
    as ``{slot: the first tensor's array}``.
    """
    if run is None:
        def run(op, inputs, slots, attrs, place):
            return _run_op(op, inputs, slots, attrs, place, counts)
    want = run(op, inputs, slots, attrs, CPUPlace())
    got = run(op, inputs, slots, attrs, CUDAPlace(0))
    assert sorted(want) == sorted(got), f"{op}: outputs {sorted(got)}, expected {sorted(want)}"
    for slot in slots:
        assert len(got[slot]) == len(want[slot]), slot
        for i, (w, g) in enumerate(zip(want[slot], got[slot])):
            where = f"{op} {slot}[{i}]"
            wa, ga = np.asarray(w.numpy()), np.asarray(g.numpy())
            assert ga.dtype == wa.dtype and ga.shape == wa.shape, \
                f"{where}: {ga.dtype}{list(ga.shape)}, expected {wa.dtype}{list(wa.shape)}"
            t = tol if tol is not None else DEVICE_TOLERANCES
            t = t.get(wa.dtype.name, 0) if isinstance(t, dict) else t
            np.testing.assert_allclose(ga, wa, rtol=t, atol=t if atol is None else atol,
                                       equal_nan=equal_nan, err_msg=where)
            assert [list(v) for v in g.lod] == [list(v) for v in w.lod], f"{where}: LoD"
    return {slot: np.asarray(ts[0].numpy()) for slot, ts in want.items() if ts}


def cuda_refuses(op, inputs, slots, attrs, match):
    """Assert that running ``op`` on CUDAPlace(0) raises an error matching ``match`` (the
    CPU kernel's refusal, which the test checks beside it or elsewhere)."""
    import pytest
    with pytest.raises(Exception, match=match):
        run_op(op, inputs, slots, attrs, CUDAPlace(0))
