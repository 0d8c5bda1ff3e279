"""Every op with a CPU kernel has a CUDA kernel, or says why it runs on the host only
(``OpDef(host_only="why")``), or is listed in CUDA_PENDING (issue 11: not yet ported)."""
import pytest

from headrace.errors import OpDefinitionError
from headrace.ops import In, OpDef, Out, build_registry, default_registry
from headrace.ops.shape import same_as

# The CUDA kernel modules import numba, so the check runs where they load: the cudasim and gpu
# environments (the cpu environment has no numba, and would see every CUDA kernel missing).
pytestmark = pytest.mark.cuda

REGISTRY = default_registry()

# Ops with a CPU kernel whose CUDA kernel is not written yet. This list may only shrink: a port
# removes its ops here (the test fails while a ported op is still listed), and a new op comes
# with its CUDA kernel or a host_only reason instead of joining the list. Keep it alphabetized.
CUDA_PENDING = []


def _kernels(op_type):
    return REGISTRY.kernels_for(op_type)


def _cpu_ops():
    return sorted(t for t in REGISTRY if _kernels(t).get("cpu") is not None)


def _missing_cuda(registry, pending=()):
    """Ops of ``registry`` with a CPU kernel, no CUDA kernel, no host_only reason and not in
    ``pending``."""
    return sorted(t for t in registry if registry.kernels_for(t).get("cpu") is not None
                  and registry.kernels_for(t).get("cuda") is None
                  and registry.get(t).host_only is None and t not in pending)


def test_pending_list_is_sorted_and_unique():
    assert CUDA_PENDING == sorted(set(CUDA_PENDING))


def test_every_cpu_op_has_a_cuda_kernel_or_a_reason():
    missing = _missing_cuda(REGISTRY, set(CUDA_PENDING))
    assert not missing, (f"ops with a CPU kernel but no CUDA kernel: {missing}; write the CUDA "
                         f"kernel (kernels/cuda/<module>.py) or give the op's definition "
                         f"host_only=\"why it runs on the host only\"")


def test_pending_list_stays_true():
    ported = [t for t in CUDA_PENDING if t in REGISTRY and _kernels(t).get("cuda") is not None]
    assert not ported, f"ops with a CUDA kernel now: remove {ported} from CUDA_PENDING"
    unknown = [t for t in CUDA_PENDING if t not in REGISTRY or _kernels(t).get("cpu") is None]
    assert not unknown, f"not an op with a CPU kernel any more: remove {unknown} from CUDA_PENDING"
    host = [t for t in CUDA_PENDING if REGISTRY.get(t).host_only is not None]
    assert not host, f"host-only ops need no CUDA kernel: remove {host} from CUDA_PENDING"


def test_host_only_ops_have_no_cuda_kernel():
    both = [t for t in REGISTRY if REGISTRY.get(t).host_only is not None
            and _kernels(t).get("cuda") is not None]
    assert not both, f"ops marked host_only that have a CUDA kernel: {both}"


def test_host_only_must_say_why():
    OpDef("host_io", no_kernel=True, host_only="writes a file")
    for bad in ("", "  ", True, 1):
        with pytest.raises(OpDefinitionError, match="host_only must say why"):
            OpDef("host_io", no_kernel=True, host_only=bad)


def test_the_check_catches_a_cpu_only_op():
    # The check above on a registry with one op more that has only a CPU kernel: it is named,
    # and its host_only twin is not.
    registry = build_registry(autoload=False)
    assert _missing_cuda(registry) == []    # the core's own ops all have CUDA kernels
    for op_type, host_only in (("cpu_only", None), ("host_side", "reads a host file")):
        registry.add_op(OpDef(op_type, inputs=[In("X")], outputs=[Out("Out")],
                              infer=same_as("X"), host_only=host_only))
        registry.add_kernel(op_type, "cpu", lambda x: x)
    assert _missing_cuda(registry) == ["cpu_only"]
    assert _missing_cuda(registry, {"cpu_only"}) == []
