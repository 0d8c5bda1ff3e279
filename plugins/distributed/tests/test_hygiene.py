"""Every op of the plugin is complete: a CPU kernel, a NumPy reference and a sample, and each
sample, run through the executor on a one-rank world, matches its reference (the multi-rank
behaviour is tested under mpiexec in test_collective.py)."""
import numpy as np
import pytest

from headrace.ops import default_registry, iter_op_modules
from headrace.testing import check_op, definition_problems, op_definitions
from headrace.testing.optest import IN_PLACE_OUTPUTS, run_op
from headrace.testing.plugin_dists import first_party_plugin

pytest.importorskip("mpi4py", reason="the collectives run MPI: pip install headrace[distributed]")

PACKAGE = "headrace_distributed.ops"
PLUGIN = first_party_plugin("distributed")  # "headrace:distributed" where installed whole
OPDEFS = op_definitions(PACKAGE)
REFERENCES, SAMPLES = {}, {}
for _m in iter_op_modules("headrace_distributed.reference"):
    REFERENCES.update(_m.REFERENCES)
    SAMPLES.update(_m.SAMPLES)
EXPECTED = ["barrier", "c_allgather", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod",
            "c_allreduce_sum", "c_broadcast", "c_identity", "c_reducescatter", "coalesce_tensor",
            "sync_batch_norm", "sync_batch_norm_grad"]


def test_the_ops_of_the_family():
    assert sorted(d.type for d in OPDEFS) == EXPECTED
    assert set(REFERENCES) == set(SAMPLES) == set(EXPECTED)


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_registered_documented_with_kernels(opdef):
    assert not definition_problems(opdef, PLUGIN, PACKAGE)
    assert {"float32", "float64"} <= set(default_registry().kernels_for(opdef.type)["cpu"])


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sample_matches_reference_on_one_rank(opdef, dtype):
    inputs, attrs = SAMPLES[opdef.type](np.random.default_rng(0), dtype)
    full = {a.name: a.default for a in opdef.attrs.values() if not a.required}
    full.update(attrs)
    expected = REFERENCES[opdef.type]({k: (v.copy() if hasattr(v, "copy") else v)
                                       for k, v in inputs.items()}, full)
    if opdef.type != "sync_batch_norm":
        check_op(opdef.type, inputs, expected, attrs=attrs)
        return
    # The running statistics are updated in place: MeanOut is the Mean variable.
    got = run_op(opdef.type, inputs, list(expected), attrs, same_var=IN_PLACE_OUTPUTS["batch_norm"])
    for slot, value in expected.items():
        np.testing.assert_allclose(got[slot][0].numpy(), value, rtol=1e-5, atol=1e-6,
                                   err_msg=slot)
