"""Every op of the plugin is complete: a CPU kernel, a NumPy reference and a sample, and each
sample, run through the executor, matches its reference."""
import numpy as np
import pytest

from headrace.ops import default_registry, iter_op_modules
from headrace.testing import check_op
from headrace.testing.plugin_dists import first_party_plugin

PLUGIN = first_party_plugin("optim")  # "headrace:optim" where installed whole
OPDEFS = [d for m in iter_op_modules("headrace_optim.ops") for d in m.OPS if not d.no_kernel]
REFERENCES, SAMPLES = {}, {}
for _m in iter_op_modules("headrace_optim.reference"):
    REFERENCES.update(_m.REFERENCES)
    SAMPLES.update(_m.SAMPLES)


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_op_has_kernel_reference_and_sample(opdef):
    kernels = default_registry().kernels_for(opdef.type)
    assert "cpu" in kernels, f"{opdef.type}: no CPU kernel"
    assert set(kernels["cpu"]) >= {"float32", "float64"}
    assert opdef.type in REFERENCES and opdef.type in SAMPLES


def test_nothing_extra():
    assert set(REFERENCES) == set(SAMPLES) == {d.type for d in OPDEFS}


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", range(4))
def test_sample_matches_reference(opdef, dtype, seed):
    inputs, attrs = SAMPLES[opdef.type](np.random.default_rng(seed), dtype)
    full = {a.name: a.default for a in opdef.attrs.values() if not a.required}
    full.update(attrs)
    expected = REFERENCES[opdef.type](inputs, full)
    assert all(v is not None for v in expected.values())  # every update is deterministic
    check_op(opdef.type, inputs, expected, attrs=attrs)
