"""The CUDA caching allocator: its pool bookkeeping (pure Python, no GPU), the hr.cuda counters,
the EMM wiring on a real GPU, and the install hint when Numba is missing. A training step's
reuse of the pool in Numba's simulator is tests/test_cuda_step_memory.py."""
import os
import subprocess
import sys
import textwrap

import pytest

import headrace as hr
from headrace.devices.cuda_pool import CachingPool, size_class


class FakeDriver:
    """Counts driver allocations; blocks are distinct objects."""

    def __init__(self, limit=None):
        self.live = []
        self.calls = 0
        self.limit = limit

    def alloc(self, nbytes):
        if self.limit is not None and sum(n for _, n in self.live) + nbytes > self.limit:
            raise MemoryError("out of device memory")
        self.calls += 1
        block = [nbytes]
        self.live.append((block, nbytes))
        return block

    def free(self, block):
        self.live = [(b, n) for b, n in self.live if b is not block]


def test_size_classes_round_up_and_bound_waste():
    assert size_class(0) == 512 and size_class(1) == 512 and size_class(513) == 1024
    for n in (1 << 20, (1 << 20) + 1, 3_000_000, 123_456_789):
        c = size_class(n)
        assert n <= c < n * 1.25 + 512
    with pytest.raises(ValueError, match="negative"):
        size_class(-1)


def test_a_steady_state_step_allocates_nothing_new():
    drv = FakeDriver()
    pool = CachingPool(drv.alloc, drv.free)
    sizes = [400, 4096, 4096, 70_000, 2_000_000]

    def step():
        blocks = [pool.malloc(n)[0] for n in sizes]
        for b in blocks:
            pool.release(b)

    step()
    first = drv.calls
    assert first == len(sizes) and pool.allocated == 0
    reserved = pool.reserved
    for _ in range(5):
        step()
    assert drv.calls == first and pool.reserved == reserved and pool.cached == reserved


def test_counters_track_use_and_empty_cache_returns_only_free_blocks():
    drv = FakeDriver()
    pool = CachingPool(drv.alloc, drv.free)
    a, sa = pool.malloc(1000)
    b, sb = pool.malloc(5000)
    assert pool.allocated == sa + sb == pool.reserved
    pool.release(a)
    assert pool.allocated == sb and pool.cached == sa
    pool.empty_cache()
    assert pool.reserved == sb and len(drv.live) == 1 and drv.live[0][0] is b
    with pytest.raises(ValueError, match="not handed out"):
        pool.release(a)


def test_out_of_memory_frees_the_cache_and_retries():
    drv = FakeDriver(limit=4096)
    pool = CachingPool(drv.alloc, drv.free)
    a, _ = pool.malloc(3000)
    pool.release(a)                      # 3072 cached; a 2048 request does not fit beside it
    b, size = pool.malloc(2000)
    assert size == 2048 and pool.reserved == 2048 and len(drv.live) == 1


def test_hr_cuda_counters_exist():
    pytest.importorskip("numba")
    assert hr.cuda.memory_allocated() >= 0 and hr.cuda.memory_reserved() >= 0
    hr.cuda.empty_cache()


@pytest.mark.cuda
def test_emm_reuses_blocks_on_a_gpu():
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        pytest.skip("Numba's CUDA simulator has no External Memory Management plugins "
                    "(a platform limit); the pool logic is tested above without a GPU, and "
                    "a training step's reuse in the simulator by test_cuda_step_memory.py")
    import numpy as np
    prog = hr.Program()
    blk = prog.global_block()
    x = blk.create_var(name="x", shape=[-1, 8], dtype="float32", need_check_feed=True)
    blk.append_op("relu", {"X": x}, {"Out": "out"})
    exe = hr.Executor(hr.CUDAPlace(0))
    feed = {"x": np.ones((4, 8), "float32")}
    exe.run(prog, feed=feed, fetch_list=["out"], scope=hr.Scope())
    from headrace.devices import cuda as dev
    calls = sum(p.driver_allocs for p in dev._POOLS)
    assert calls > 0
    for _ in range(3):
        exe.run(prog, feed=feed, fetch_list=["out"], scope=hr.Scope())
    assert sum(p.driver_allocs for p in dev._POOLS) == calls
    assert hr.cuda.memory_reserved() >= hr.cuda.memory_allocated()


# A relu on CUDAPlace(0), run in a child process after SETUP (which breaks the environment as
# a test needs); prints the error the run raised, or "no error".
_FIRST_USE = """
import sys
{setup}
import numpy as np
import headrace as hr
prog = hr.Program()
b = prog.global_block()
x = b.create_var(name="x", shape=[-1, 2], dtype="float32", need_check_feed=True)
b.append_op("relu", {{"X": x}}, {{"Out": "out"}})
try:
    hr.Executor(hr.CUDAPlace(0)).run(prog, feed={{"x": np.ones((1, 2), "float32")}},
                                     fetch_list=["out"], scope=hr.Scope())
except hr.errors.HeadraceError as e:
    print(type(e).__name__, e)
else:
    print("no error")
"""


def _first_use(setup, env):
    out = subprocess.run([sys.executable, "-c", _FIRST_USE.format(setup=textwrap.dedent(setup))],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_cudaplace_without_numba_says_how_to_install():
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = _first_use('sys.modules["numba"] = None   # import numba raises ImportError', env)
    assert "DeviceUnavailableError" in out
    assert "pip install headrace[cuda]" in out


@pytest.mark.cuda
def test_a_numba_cuda_that_cannot_compile_is_named_at_first_use():
    # Found on an H100: numba-cuda 0.30.4 with NumPy 2.5 (no numpy.row_stack) compiled no
    # kernel, and every op failed its first launch with a bare AttributeError. Here NumPy loses
    # row_stack, and the device is taken for a real one (SIMULATOR False) so that the check runs.
    pytest.importorskip("numba")
    out = _first_use("""
        import numpy
        from headrace.devices import cuda as dev
        assert dev.compiler_problem() is None           # this environment's pair works
        dev._COMPILER_OK = False
        for name in [m for m in sys.modules if m.startswith("numba.cuda.np.arrayobj")]:
            del sys.modules[name]
        del numpy.row_stack
        dev.SIMULATOR = False
        dev._install_memory_manager = lambda: None      # the simulator has no EMM plugins
    """, dict(os.environ, NUMBA_ENABLE_CUDASIM="1"))
    assert "DeviceUnavailableError" in out, out
    assert "CUDAPlace(0)" in out
    assert "row_stack" in out and "numba-cuda" in out
    import numpy as np
    assert f"NumPy {np.__version__}" in out
    assert "pip install 'numpy<2.5'" in out
