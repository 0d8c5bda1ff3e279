"""mul / matmul / matmul_v2 and their grads on CUDAPlace (Numba's simulator without a GPU):
sizes crossing the GEMM's tile edges (both tile geometries), transposes, alpha, broadcast batch
dims, 1-D operands, empty products, errors equal to the CPU kernel's, and the gradients (a
broadcast operand's summed over its batch dims) against the CPU kernel. Shapes stay tiny: the
simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing import check_op, run_op

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)
PLACES = [CPU, GPU]


def _rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _np_matmul(x, y, tx, ty, alpha=1.0):
    a, b = x.astype("float64"), y.astype("float64")
    if tx and a.ndim > 1:
        a = np.swapaxes(a, -1, -2)
    if ty and b.ndim > 1:
        b = np.swapaxes(b, -1, -2)
    return (alpha * np.matmul(a, b)).astype(x.dtype)


@pytest.mark.parametrize("xs,ys,tx,ty", [
    ((1, 1), (1, 1), False, False),
    ((17, 33), (33, 9), False, False),        # edges of the small 16 x 16 tile, K > BK
    ((33, 17), (9, 33), True, True),
    ((17, 33), (9, 33), False, True),
    ((65, 3), (70, 3), False, True),          # the 64 x 64 tile, past its edges
    ((5,), (5,), False, False),               # vector . vector: 0-D
    ((4,), (2, 4, 3), True, False),           # a 1-D X ignores its transpose
    ((2, 3, 5), (5,), False, True),
    ((2, 1, 4, 3), (3, 3, 5), False, False),  # batch broadcast both ways
    ((3, 4), (2, 2, 5, 3), True, True),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_v2_against_numpy(xs, ys, tx, ty, dtype):
    x, y = _rand(xs, dtype, 1), _rand(ys, dtype, 2)
    check_op("matmul_v2", {"X": x, "Y": y}, {"Out": _np_matmul(x, y, tx, ty)},
             attrs={"trans_x": tx, "trans_y": ty}, places=PLACES)


@pytest.mark.parametrize("xs,ys,tx,ty", [((3, 7), (7, 2), False, False),
                                         ((2, 7, 3), (1, 2, 7), True, True),
                                         ((6,), (6, 3), False, False)])
def test_matmul_alpha(xs, ys, tx, ty):
    x, y = _rand(xs, "float32", 3), _rand(ys, "float32", 4)
    check_op("matmul", {"X": x, "Y": y}, {"Out": _np_matmul(x, y, tx, ty, -0.5)},
             attrs={"transpose_X": tx, "transpose_Y": ty, "alpha": -0.5}, places=PLACES)


@pytest.mark.parametrize("xs,ys,xn,yn", [((2, 3, 4), (4, 5), 2, 1), ((2, 3, 4), (3, 4, 2), 1, 2),
                                         ((1, 1), (1, 1), 1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mul_flattening(xs, ys, xn, yn, dtype):
    x, y = _rand(xs, dtype, 5), _rand(ys, dtype, 6)
    m, n = int(np.prod(xs[:xn])), int(np.prod(ys[yn:]))
    out = (x.reshape(m, -1).astype("float64") @ y.reshape(-1, n)).astype(dtype)
    check_op("mul", {"X": x, "Y": y}, {"Out": out.reshape(xs[:xn] + ys[yn:])},
             attrs={"x_num_col_dims": xn, "y_num_col_dims": yn}, places=PLACES)


@pytest.mark.parametrize("xs,ys", [((3, 0), (0, 4)), ((0, 3), (3, 4)), ((2, 0, 3), (3, 4))])
def test_empty_products(xs, ys):
    x, y = np.ones(xs, "float32"), np.ones(ys, "float32")
    check_op("matmul_v2", {"X": x, "Y": y}, {"Out": np.matmul(x, y)}, places=PLACES)


@pytest.mark.parametrize("op,xs,ys,attrs,match", [
    ("matmul_v2", (3, 4), (5, 2), {}, "contraction dim 4 != "),
    ("matmul_v2", (2, 3, 4), (3, 4, 2), {}, "cannot be broadcast"),
    ("mul", (2, 3), (4, 5), {"x_num_col_dims": 1, "y_num_col_dims": 1}, "flattened width 3"),
])
def test_errors_match_the_cpu_kernel(op, xs, ys, attrs, match):
    for place in PLACES:
        with pytest.raises(Exception, match=match):
            run_op(op, {"X": np.ones(xs, "float32"), "Y": np.ones(ys, "float32")},
                   attrs=attrs, place=place)


@pytest.mark.parametrize("op,xs,ys,attrs", [
    ("matmul_v2", (3, 4), (5, 2), {"trans_x": False, "trans_y": False}),
    ("matmul", (2, 3, 4), (3, 4, 2), {"transpose_X": False, "transpose_Y": False, "alpha": 1.0}),
    ("mul", (2, 3), (4, 5), {"x_num_col_dims": 1, "y_num_col_dims": 1}),
    ("mul", (2, 3), (4, 5), {"x_num_col_dims": 2, "y_num_col_dims": 1}),
    ("matmul_v2", (3,), (), {"trans_x": False, "trans_y": False}),
])
def test_kernel_errors_equal_the_cpu_kernels(op, xs, ys, attrs):
    # The kernels themselves, past shape inference: the same exception and message.
    from numba import cuda
    from headrace_math.kernels.cpu import matmul as cpu
    from headrace_math.kernels.cuda import matmul as gpu
    x, y = np.ones(xs, "float32"), np.ones(ys, "float32")
    errors = []
    for mod, args in ((cpu, (x, y)), (gpu, (cuda.to_device(x), cuda.to_device(y)))):
        maker = next(m for t, m, _ in mod.KERNELS if t == op)
        with pytest.raises(Exception) as e:
            maker(attrs, None)(*args)
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1]


def _same_as_cpu(op, inputs, attrs, slots=("X@GRAD", "Y@GRAD")):
    want = run_op(op, inputs, list(slots), attrs, CPU)
    got = run_op(op, inputs, list(slots), attrs, GPU)
    assert sorted(got) == sorted(want) == sorted(slots)
    tol = 1e-5 if inputs["X"].dtype == np.float32 else 1e-12
    for s in slots:
        w, g = np.asarray(want[s][0]), np.asarray(got[s][0])
        assert g.shape == w.shape and g.dtype == w.dtype, s
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{op} {s}")


@pytest.mark.parametrize("xs,ys,tx,ty", [
    ((17, 5), (5, 9), False, False),
    ((5, 17), (9, 5), True, True),
    ((2, 3, 4), (4, 5), False, False),        # stacked rows: Y@GRAD one GEMM over 6 rows
    ((2, 3, 4), (5, 4), False, True),
    ((2, 4, 3), (4, 5), True, False),         # Y broadcast, X transposed: summed scratch
    ((3, 4), (2, 2, 5, 3), True, True),       # X broadcast over two batch dims
    ((2, 1, 4, 3), (3, 3, 5), False, False),  # both broadcast
    ((5,), (5,), False, False),               # 0-D Out
    ((4,), (2, 3, 4), False, True),
    ((2, 5, 3), (5,), True, False),
    ((2, 0, 3), (3, 4), False, False),        # empty batch: a broadcast Y@GRAD of zeros
    ((3, 0), (0, 4), False, False),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_v2_grad_against_the_cpu_kernel(xs, ys, tx, ty, dtype):
    x, y = _rand(xs, dtype, 7), _rand(ys, dtype, 8)
    g = _rand(_np_matmul(x, y, tx, ty).shape, dtype, 9)
    _same_as_cpu("matmul_v2_grad", {"X": x, "Y": y, "Out@GRAD": g},
                 {"trans_x": tx, "trans_y": ty})


@pytest.mark.parametrize("slots", [("X@GRAD",), ("Y@GRAD",), ("X@GRAD", "Y@GRAD")])
def test_matmul_grad_alpha_and_wanted_outputs(slots):
    x, y = _rand((2, 3, 4), "float64", 10), _rand((1, 5, 3), "float64", 11)
    g = _rand((2, 4, 5), "float64", 12)
    _same_as_cpu("matmul_grad", {"X": x, "Y": y, "Out@GRAD": g},
                 {"transpose_X": True, "transpose_Y": True, "alpha": 0.25}, slots)


@pytest.mark.parametrize("xs,ys,xn,yn", [((2, 3, 4), (4, 5), 2, 1), ((2, 3, 4), (3, 4, 2), 1, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mul_grad_against_the_cpu_kernel(xs, ys, xn, yn, dtype):
    x, y = _rand(xs, dtype, 13), _rand(ys, dtype, 14)
    g = _rand(xs[:xn] + ys[yn:], dtype, 15)
    _same_as_cpu("mul_grad", {"X": x, "Y": y, "Out@GRAD": g},
                 {"x_num_col_dims": xn, "y_num_col_dims": yn})


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_the_core_gemm_with_beta_leading_dims_and_offsets(ta, tb):
    # The entry point other plugins (conv2d) call: C = alpha op(A) op(B) + beta C on
    # sub-matrices of wider buffers, and sum_batches over a broadcast dim.
    from numba import cuda

    from headrace.kernels.cuda_gemm import gemm, sum_batches
    M, N, K = 5, 7, 3
    a = _rand((2, 9, 9), "float64", 16)     # batch stride 81, ld 9, offset 10
    b = _rand((9, 9), "float64", 17)        # ld 9, offset 2
    c = _rand((2, 6, 8), "float64", 18)     # batch stride 48, ld 8, offset 1
    dc = cuda.to_device(c)
    gemm(cuda.to_device(a), cuda.to_device(b), dc, M, N, K, ta, tb, alpha=2.0, beta=-1.0,
         lda=9, ldb=9, ldc=8, batch=(2,), a_strides=(81,), b_strides=(0,), c_stride=48,
         a_offset=10, b_offset=2, c_offset=1)
    got, want = dc.copy_to_host(), c.copy()
    for z in range(2):
        sa = a.reshape(-1)[10 + 81 * z:][:5 * 9].reshape(5, 9)
        sb = b.reshape(-1)[2:2 + 7 * 9].reshape(7, 9)
        opa = sa[:K, :M].T if ta else sa[:M, :K]
        opb = sb[:N, :K].T if tb else sb[:K, :N]
        w = want[z].reshape(-1)[1:1 + 5 * 8].reshape(5, 8)
        w[:, :N] = 2.0 * opa @ opb - w[:, :N]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    total = cuda.device_array((1, 6, 8))
    sum_batches(dc, total, (2,), (False,), 48)
    np.testing.assert_allclose(total.copy_to_host(), got.sum(0, keepdims=True), rtol=1e-12)
