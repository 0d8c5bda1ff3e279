"""Every math op is complete: a CPU kernel, a NumPy reference and a sample, and each sample
runs through the executor to the reference's numbers (float32 and float64)."""
import numpy as np
import pytest

from headrace.ops import iter_op_modules
from headrace_math.reference import MODULES, all_references, all_samples

OPS = [op for m in iter_op_modules("headrace_math.ops") for op in m.OPS]
KERNEL_OPS = [op for op in OPS if not op.no_kernel]


def test_reference_modules_mirror_op_modules():
    ops = sorted(m.__name__.rsplit(".", 1)[1] for m in iter_op_modules("headrace_math.ops"))
    refs = sorted(m.__name__.rsplit(".", 1)[1]
                  for m in iter_op_modules("headrace_math.reference"))
    assert refs == ops == sorted(MODULES)


@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_op_has_kernel_reference_and_sample(math_registry, opdef):
    assert "cpu" in math_registry.kernels_for(opdef.type), f"{opdef.type}: no CPU kernel"
    assert opdef.type in all_references(), f"{opdef.type}: no REFERENCES entry"
    assert opdef.type in all_samples(), f"{opdef.type}: no SAMPLES entry"


def test_no_stray_entries():
    types = {op.type for op in OPS}
    assert set(all_references()) <= types and set(all_samples()) <= types


@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_kernel_dtypes_are_declared_by_the_op(math_registry, opdef):
    # A kernel may serve fewer dtypes than the op allows (float16), never others.
    for slot in opdef.inputs[:1]:
        if slot.dtypes is not None:
            assert set(math_registry.kernels_for(opdef.type)["cpu"]) <= set(slot.dtypes)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_sample_matches_reference(check, opdef, dtype):
    for seed in range(3):
        inputs, attrs = all_samples()[opdef.type](np.random.default_rng(seed), dtype)
        check(opdef.type, inputs, attrs)


def _strided(v):
    if isinstance(v, list):
        return [_strided(a) for a in v]
    return np.repeat(v, 2, axis=-1)[..., ::2] if v.ndim else v


@pytest.mark.parametrize("opdef", KERNEL_OPS, ids=lambda d: d.type)
def test_sample_with_strided_inputs(check, opdef):
    # The executor makes fed arrays contiguous; strided feeds must give the same numbers.
    inputs, attrs = all_samples()[opdef.type](np.random.default_rng(7), "float64")
    strided = {slot: _strided(v) for slot, v in inputs.items()}
    assert all(not a.flags.c_contiguous for v in strided.values()
               for a in (v if isinstance(v, list) else [v]) if a.ndim and a.shape[-1] > 1)
    check(opdef.type, strided, attrs)
