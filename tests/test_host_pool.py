"""headrace's host caching pool for NumPy arrays (runtime/_host_pool.pyx, runtime.host_memory):
what it hands out (aligned, zeroed by calloc, kept by realloc), how it reuses and caps its
cache, that threads may share it, and that an Executor uses it only during its runs."""
import gc
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import headrace as hr
from headrace.runtime import _host_pool as pool

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:   # NumPy 1.x
    from numpy.core.multiarray import get_handler_name


class _pooled:
    """NumPy's handler is the pool's inside the block (as during a run)."""
    def __enter__(self):
        self.old = pool.enter()

    def __exit__(self, *exc):
        pool.leave(self.old)


@pytest.fixture
def fresh_pool():
    """An empty cache with the default limit, put back after the test. The cyclic collector
    is paused: a collection between two reads of the counters could free a pooled array an
    earlier test left in a cycle (a free more, and its block first in its class's list)."""
    limit = pool.stats()["cache_limit_bytes"]
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    pool.trim(0)
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()
        pool.set_limit(limit)


def _delta(before, after, *keys):
    return {k: after[k] - before[k] for k in keys}


def test_blocks_are_64_byte_aligned_and_named_for_the_pool(fresh_pool):
    with _pooled():
        arrays = [np.empty(n, np.uint8) for n in (1, 7, 64, 65, 255, 257, 4097, 1 << 20)]
    assert get_handler_name(np.empty(3)) != pool.NAME   # outside: NumPy's own again
    for a in arrays:
        assert get_handler_name(a) == pool.NAME
        assert a.ctypes.data % 64 == 0
        a[:] = 7   # the whole capacity asked for is writable
    assert [pool.class_size(n) for n in (0, 1, 64, 65, 256, 257, 512, 513, 1000, 1 << 20)] == \
        [64, 64, 64, 128, 256, 320, 512, 640, 1024, 1 << 20]


def test_a_freed_block_is_the_next_one_of_its_class_and_counted(fresh_pool):
    with _pooled():
        a = np.empty(1000, np.float32)
        where = a.ctypes.data
        before = pool.stats()
        del a
        b = np.empty(999, np.float32)     # same class (4 KiB): the block freed last
        after = pool.stats()
    assert b.ctypes.data == where
    assert _delta(before, after, "cache_hits", "fresh_allocations", "frees") == \
        {"cache_hits": 1, "fresh_allocations": 0, "frees": 1}


def test_calloc_zeroes_a_reused_block(fresh_pool):
    with _pooled():
        a = np.empty(1 << 16, np.float64)
        a[:] = np.nan
        where = a.ctypes.data
        del a
        z = np.zeros(1 << 16, np.float64)   # NumPy's zeros: the handler's calloc
    assert z.ctypes.data == where           # the dirty block, reused
    assert not z.any()


def test_realloc_keeps_the_contents_and_moves_across_classes(fresh_pool):
    with _pooled():
        a = np.arange(1000, dtype=np.int64)
        where = a.ctypes.data
        a.resize(1010, refcheck=False)       # 8000 -> 8080 bytes: the same class, in place
        assert a.ctypes.data == where
        a.resize(100000, refcheck=False)     # another class: moved, contents copied
        assert np.array_equal(a[:1000], np.arange(1000))
        assert not a[1010:].any()            # ndarray.resize zero-fills what it adds
        a.resize(10, refcheck=False)         # shrunk to a small class: moved again
        assert np.array_equal(a, np.arange(10))
        grown = np.fromiter(range(100000), dtype=np.int64)   # grows by realloc as it reads
    assert np.array_equal(grown, np.arange(100000))
    assert get_handler_name(grown) == pool.NAME


def test_the_cache_stays_under_its_limit_and_empties(fresh_pool):
    pool.set_limit(1 << 20)
    with _pooled():
        arrays = [np.empty(300 << 10, np.uint8) for _ in range(6)]   # 6 x 320 KiB blocks
    before = pool.stats()
    del arrays
    after = pool.stats()
    assert after["cached_bytes"] <= 1 << 20
    assert after["cached_bytes"] == 3 * (320 << 10)   # three fit, three went to malloc
    assert _delta(before, after, "releases")["releases"] == 3
    hr.host_memory.empty_cache()
    assert pool.stats()["cached_bytes"] == 0
    assert hr.host_memory.memory_reserved() == hr.host_memory.memory_allocated()


def test_threads_share_the_pool_without_handing_a_block_out_twice(fresh_pool):
    # Each thread allocates in its own context, fills each array with its own mark, frees
    # some in another thread (a queue), and checks every array it still holds: a block
    # handed to two threads at once would show the other's mark.
    base = pool.stats()["allocated_bytes"]
    handoff, errors = [], []
    lock = threading.Lock()

    def work(mark):
        rng = np.random.default_rng(mark)
        held = []
        with _pooled():
            for step in range(400):
                a = np.empty(int(rng.integers(1, 50000)), np.uint8)
                a[:] = mark
                held.append(a)
                if len(held) > 8:
                    victim = held.pop(int(rng.integers(0, len(held))))
                    if step % 3 == 0:
                        with lock:
                            handoff.append(victim)   # freed by whichever thread pops it
                    del victim
                with lock:
                    theirs = handoff.pop() if handoff else None
                del theirs
                for h in held:
                    if h[0] != mark or h[-1] != mark:
                        errors.append(mark)
        held.clear()

    threads = [threading.Thread(target=work, args=(m,)) for m in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    handoff.clear()
    assert not errors
    stats = pool.stats()
    assert stats["allocated_bytes"] == base   # every block came back
    assert stats["cached_bytes"] <= stats["cache_limit_bytes"]


def test_an_executor_run_allocates_from_the_pool_but_returns_numpys_arrays():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 512], dtype="float32")
        h = hr.layers.fc(x, size=512, act="relu")
        loss = hr.layers.mean(hr.layers.fc(h, size=512))
        hr.optimizer.SGD(0.01).minimize(loss)
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((256, 512), np.float32)}   # a run of a few MB: pooled
    before = pool.stats()["allocations"]
    got, = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert pool.stats()["allocations"] > before
    assert get_handler_name(got) != pool.NAME           # fetched: a copy, NumPy's
    assert get_handler_name(np.empty(4)) != pool.NAME   # the user's arrays: NumPy's
    # Parameters the step wrote live on in the scope; whatever made them, they are usable.
    w = scope.find(main.global_block().all_parameters()[0].name).data
    assert np.isfinite(w).all()


def test_a_failing_run_puts_numpys_handler_back():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        y = hr.layers.data("y", shape=[-1, 4], dtype="float32")
        out = hr.layers.elementwise_add(x, y)
    exe = hr.Executor(hr.CPUPlace())
    with pytest.raises(hr.OpError):
        exe.run(main, feed={"x": np.ones((3, 4), np.float32),
                            "y": np.ones((2, 4), np.float32)}, fetch_list=[out])
    assert get_handler_name(np.empty(4)) != pool.NAME


def test_the_environment_turns_the_pool_off():
    code = textwrap.dedent("""
        import numpy as np
        import headrace as hr
        from headrace.runtime import host_memory
        main, startup = hr.Program(), hr.Program()
        with hr.program_guard(main, startup):
            x = hr.layers.data("x", shape=[-1, 1024], dtype="float32")
            out = hr.layers.relu(hr.layers.scale(x, 2.0))
        hr.Executor(hr.CPUPlace()).run(main, feed={"x": np.ones((512, 1024), np.float32)},
                                       fetch_list=[out])
        print(host_memory.pool() is None, hr.host_memory.memory_stats(),
              hr.host_memory.memory_allocated())
    """)
    env = {**os.environ, "HEADRACE_HOST_POOL": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "{}", "0"]


def test_only_runs_that_allocate_a_mebibyte_use_the_pool():
    # Entering the pool costs ~0.3 us a run: a signature whose first run allocates less than
    # host_memory.POOL_MIN_RUN keeps NumPy's allocator from then on; a larger one, the pool.
    from headrace.runtime import host_memory
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 256], dtype="float32")
        out = hr.layers.scale(hr.layers.relu(hr.layers.scale(x, 2.0)), 0.5)
    exe = hr.Executor(hr.CPUPlace())
    small, big = np.ones((1, 256), np.float32), np.ones((4096, 256), np.float32)   # 4 MiB
    for _ in range(2):
        for feed in (small, big):
            np.testing.assert_array_equal(exe.run(main, feed={"x": feed}, fetch_list=[out])[0],
                                          feed)
    rp = exe._run_plan(main, ("x",), (out.name,), False)
    assert rp.pooled == {(((1, 256), np.dtype("float32")),): False,    # one per feed
                         (((4096, 256), np.dtype("float32")),): True}
    assert host_memory.pool_pays(host_memory.POOL_MIN_RUN)
    assert not host_memory.pool_pays(host_memory.POOL_MIN_RUN - 1)
