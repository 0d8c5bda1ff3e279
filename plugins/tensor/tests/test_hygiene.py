"""Every op of the plugin that needs a kernel is complete: a CPU kernel, a NumPy reference and
a sample; each deterministic sample, run through the executor, matches its reference (the
random ops' references return None: test_random.py checks their statistics)."""
import numpy as np
import pytest

from headrace.ops import default_registry, iter_op_modules
from headrace.testing import check_op, run_op

OPDEFS = [d for m in iter_op_modules("headrace_tensor.ops") for d in m.OPS if not d.no_kernel]
REFERENCES, SAMPLES = {}, {}
for _m in iter_op_modules("headrace_tensor.reference"):
    REFERENCES.update(_m.REFERENCES)
    SAMPLES.update(_m.SAMPLES)
RANDOM = {"uniform_random", "gaussian_random"}


def test_only_feed_and_fetch_go_without_a_kernel():
    interpreted = [d.type for m in iter_op_modules("headrace_tensor.ops") for d in m.OPS
                   if d.no_kernel]
    assert sorted(interpreted) == ["feed", "fetch"]


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_op_has_kernel_reference_and_sample(opdef):
    assert "cpu" in default_registry().kernels_for(opdef.type), f"{opdef.type}: no CPU kernel"
    assert opdef.type in REFERENCES, f"{opdef.type}: no reference"
    assert opdef.type in SAMPLES, f"{opdef.type}: no sample"


def test_nothing_extra():
    assert set(REFERENCES) == set(SAMPLES) == {d.type for d in OPDEFS}


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", range(6))
def test_sample_matches_reference(opdef, dtype, seed):
    inputs, attrs = SAMPLES[opdef.type](np.random.default_rng(seed), dtype)
    full = {a.name: a.default for a in opdef.attrs.values() if not a.required}
    full.update(attrs)
    expected = REFERENCES[opdef.type](inputs, full)
    if opdef.type in RANDOM:
        assert expected == {"Out": None}
        (out,) = run_op(opdef.type, inputs, attrs=attrs)["Out"]
        assert out.shape == tuple(attrs["shape"]) and out.dtype == dtype
        return
    assert all(v is not None for v in expected.values())
    check_op(opdef.type, inputs, expected, attrs=attrs)
