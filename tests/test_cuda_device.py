"""The CUDA device seam: the same OpTest cases on CUDAPlace (a GPU, or Numba's simulator in the
cudasim environment) as on the CPU. Shapes are small: the simulator runs kernels in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import check_op

pytestmark = pytest.mark.cuda

rng = np.random.default_rng(0)
PLACES = [hr.CPUPlace(), hr.CUDAPlace(0)]


def rand(*shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, ys, xn", [((5, 7), (7, 3), 1), ((2, 3, 4), (12, 5), 1),
                                        ((17, 33), (33, 18), 1), ((3, 0), (0, 2), 1)])
def test_mul(dtype, xs, ys, xn):
    x, y = rand(*xs, dtype=dtype), rand(*ys, dtype=dtype)
    expected = (x.reshape(int(np.prod(xs[:xn])), -1) @ y).reshape(xs[:xn] + ys[1:])
    check_op("mul", {"X": x, "Y": y}, {"Out": expected}, attrs={"x_num_col_dims": xn},
             places=PLACES, rtol=1e-4 if dtype == "float32" else None,
             atol=1e-5 if dtype == "float32" else None)


def _ref(op, x, y):
    return {"elementwise_add": np.add, "elementwise_sub": np.subtract,
            "elementwise_mul": np.multiply, "elementwise_max": np.maximum,
            "elementwise_min": np.minimum}[op](x, y)


@pytest.mark.parametrize("op", ["elementwise_add", "elementwise_sub", "elementwise_mul",
                                "elementwise_max", "elementwise_min"])
@pytest.mark.parametrize("xs, ys, axis", [((4, 5), (4, 5), -1), ((4, 5), (5,), -1),
                                          ((2, 3, 4), (3,), 1), ((2, 3, 1), (1, 3, 4), -1),
                                          ((3,), (2, 3), -1)])
def test_elementwise(op, xs, ys, axis):
    x, y = rand(*xs), rand(*ys)
    yy = y.reshape(ys + (1,) * (len(xs) - len(ys) - axis)) if axis >= 0 else y
    check_op(op, {"X": x, "Y": y}, {"Out": _ref(op, x, yy)}, attrs={"axis": axis},
             places=PLACES)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu(dtype):
    x = rand(6, 5, dtype=dtype)
    check_op("relu", {"X": x}, {"Out": np.maximum(x, 0)}, places=PLACES)


def test_a_chain_stays_on_the_device():
    prog = hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 4], dtype="float32", need_check_feed=True)
    w = b.create_var(name="w", shape=[4, 3], dtype="float32", need_check_feed=True)
    h = b.append_op("mul", {"X": x, "Y": w}, {"Out": "h"}).output("Out")[0]
    h = b.append_op("elementwise_add", {"X": h, "Y": h}, {"Out": "h2"}).output("Out")[0]
    b.append_op("relu", {"X": h}, {"Out": "out"})
    xv, wv = rand(3, 4), rand(4, 3)
    (got,) = hr.Executor(hr.CUDAPlace(0)).run(prog, feed={"x": xv, "w": wv},
                                             fetch_list=["out"], scope=hr.Scope())
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, np.maximum(2 * (xv @ wv), 0), rtol=1e-5, atol=1e-6)
