"""The CUDA kernels stage through the host: on a one-rank world they give the CPU kernels'
values and leave device arrays (tiny cases: the simulator is slow)."""
import numpy as np
import pytest

import headrace as hr
from headrace.dtypes import to_proto
from headrace.testing import check_op

pytestmark = pytest.mark.cuda
pytest.importorskip("mpi4py", reason="the collectives run MPI: pip install headrace[distributed]")


@pytest.mark.parametrize("op_type, attrs", [("c_allreduce_sum", {}),
                                            ("c_allgather", {"nranks": 1})])
def test_collective_on_the_device(op_type, attrs):
    x = np.arange(6, dtype="float32").reshape(2, 3)
    check_op(op_type, {"X": x}, {"Out": x.copy()}, attrs=attrs, places=[hr.CUDAPlace(0)])


def test_coalesce_tensor_on_the_device():
    xs = [np.ones((2, 2), "float64"), np.arange(3, dtype="float64")]
    fused = np.concatenate([xs[0].ravel(), xs[1]])
    check_op("coalesce_tensor", {"Input": xs}, {"Output": [x.copy() for x in xs],
                                                "FusedOutput": fused},
             attrs={"copy_data": True, "use_align": False, "dtype": to_proto("float64")},
             places=[hr.CUDAPlace(0)])
