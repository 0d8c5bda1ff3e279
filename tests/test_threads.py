"""hr.set_num_threads / get_num_threads: the one thread setting of the CPU kernels and BLAS,
its default from OMP_NUM_THREADS, and parallel kernels that give the serial results."""
import os
import subprocess
import sys

import numpy as np
import pytest

import headrace as hr
from headrace.kernels import threads as kernel_threads
from headrace.runtime import threads


@pytest.fixture
def restore_threads():
    was = hr.get_num_threads()
    yield
    hr.set_num_threads(was)


def test_set_get_round_trip(restore_threads):
    for n in (1, 2, 3, 1):
        hr.set_num_threads(n)
        assert hr.get_num_threads() == n


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True, None])
def test_set_num_threads_refuses_what_is_not_a_positive_int(bad, restore_threads):
    with pytest.raises(hr.LayerError, match="set_num_threads: argument 'n'"):
        hr.set_num_threads(bad)


def test_blas_threads_under_the_setting(restore_threads):
    # The kernels' BLAS (SciPy's OpenBLAS) keeps one thread of its own: the kernels split its
    # products over headrace's threads. NumPy's OpenBLAS (user code) follows the setting.
    found = threads._find_blas()
    if not found:
        pytest.skip("BLAS is not an OpenBLAS this process can see")
    for n in (2, 1, 3):
        hr.set_num_threads(n)
        assert {name: getter() for _, name, _, getter in found} == {
            name: n if name.endswith("64_") else 1 for _, name, _, _ in found}


@pytest.mark.parametrize("value, expected", [("3", 3), ("2,1", 2), (" 1 ", 1)])
def test_default_reads_omp_num_threads(value, expected):
    assert threads.default_num_threads({"OMP_NUM_THREADS": value}) == expected


def test_default_without_or_with_a_bad_omp_num_threads_is_the_cpu_count():
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert threads.default_num_threads({}) == cpus
    assert threads.default_num_threads({"OMP_NUM_THREADS": "many"}) == cpus
    assert threads.default_num_threads({"OMP_NUM_THREADS": "0"}) == cpus


@pytest.mark.parametrize("value", ["1", "3"])
def test_a_fresh_process_honours_omp_num_threads(value):
    env = dict(os.environ, OMP_NUM_THREADS=value)
    out = subprocess.run([sys.executable, "-c",
                          "import headrace as hr; print(hr.get_num_threads())"],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == value


def test_the_kernels_are_built_with_openmp():
    if not sys.platform.startswith("linux"):
        pytest.skip("OpenMP is compiled in on Linux only (headrace.build.openmp_flags)")
    assert kernel_threads._team_size(2) == 2
    assert kernel_threads._team_size(1) == 1


@pytest.mark.parametrize("m, k, n", [(1024, 256, 512), (128, 784, 256), (37, 300, 70),
                                     (500, 64, 33), (13, 2000, 16), (300, 520, 1000),
                                     (16, 4000, 700)])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_on_two_threads_is_the_serial_result(m, k, n, transposed, dtype,
                                                     restore_threads):
    # float32: the packed GEMM splits C into whole panels or 12-row bands; float64: BLAS, one
    # single-threaded call a band of rows or columns. Either way each element is computed by
    # one thread in the serial order, so the result is bit-for-bit the one-thread one.
    from headrace_math.kernels.cpu.matmul import Matmul
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if transposed else (k, n)).astype(dtype)
    matmul = Matmul("matmul_v2", False, transposed, 1.0)
    hr.set_num_threads(1)
    serial = np.array(matmul(a, b)[0])
    hr.set_num_threads(2)
    parallel = np.array(matmul(a, b)[0])
    np.testing.assert_array_equal(parallel, serial)
    np.testing.assert_allclose(serial, a.astype("float64") @ (b.T if transposed else b),
                               rtol=1e-4, atol=1e-3)


def _conv_block_step(threads, dtype):
    """Outputs and gradients of conv2d + batch_norm + relu + residual add (its gradient is a
    sum) + sigmoid on 131K-value activations: above the grains, so 2 threads split them."""
    hr.set_num_threads(threads)
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 7
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 8, 32, 32], dtype=dtype)
        h = hr.layers.batch_norm(hr.layers.conv2d(x, 16, 3, padding=1, bias_attr=False),
                                 act="relu")
        out = hr.layers.sigmoid(hr.layers.elementwise_add(
            hr.layers.conv2d(h, 16, 3, padding=1), h))
        loss = hr.layers.mean(out)
        grads = hr.append_backward(loss)
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.random.default_rng(3).standard_normal((8, 8, 32, 32)).astype(dtype) + 2}
    fetch = [out, h, h.name + "@GRAD"] + [g for _, g in grads]
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_conv_block_on_two_threads_is_the_serial_result(dtype, restore_threads):
    # Every parallel kernel splits independent outputs (GEMM panels or row bands, batch_norm
    # channels and planes, elementwise chunks): bit for bit the serial values.
    serial = _conv_block_step(1, dtype)
    parallel = _conv_block_step(2, dtype)
    assert len(serial) == len(parallel) > 5
    for s, p in zip(serial, parallel):
        np.testing.assert_array_equal(p, s)
