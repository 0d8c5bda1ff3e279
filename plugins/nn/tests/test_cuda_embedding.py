"""lookup_table / lookup_table_v2 and grads on CUDAPlace (Numba's simulator without a GPU):
padding_idx, repeated ids accumulating in the atomic scatter-add, int32 ids for v2, a bad id
refused. Shapes stay tiny: the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import check_op

pytestmark = pytest.mark.cuda

PLACES = [hr.CPUPlace(), hr.CUDAPlace(0)]


@pytest.mark.parametrize("v2", [False, True])
def test_lookup_with_padding_and_repeats(v2):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3))
    ids = np.array([1, 3, 1, 0, 3, 1], dtype="int32" if v2 else "int64")
    out = w[ids].copy()
    out[ids == 3] = 0                      # padding_idx 3
    op = "lookup_table_v2" if v2 else "lookup_table"
    feed_ids = ids if v2 else ids[:, None]
    check_op(op, {"W": w, "Ids": feed_ids}, {"Out": out}, attrs={"padding_idx": 3},
             places=PLACES)
    dy = rng.standard_normal(out.shape)
    dw = np.zeros_like(w)
    for i, j in enumerate(ids):
        if j != 3:
            dw[j] += dy[i]                 # id 1 three times: the atomic adds accumulate
    check_op(op + "_grad", {"W": w, "Ids": feed_ids, "Out@GRAD": dy}, {"W@GRAD": dw},
             attrs={"padding_idx": 3}, places=PLACES)


def test_a_bad_id_is_refused():
    w = np.zeros((4, 2))
    with pytest.raises(Exception, match="id 9"):
        check_op("lookup_table_v2", {"W": w, "Ids": np.array([0, 9], dtype="int64")},
                 {"Out": np.zeros((2, 2))}, places=[hr.CUDAPlace(0)])
