"""After its first steps, a training step on CUDAPlace allocates nothing new from the driver and
leaves as much device memory in use as it found (issue 11), shown in Numba's CUDA simulator.

The simulator has no External Memory Management, so the ``pooled`` fixture stands in for the
caching allocator's EMM plugin (headrace.devices.cuda): it routes the simulator's allocation
entry points (cuda.device_array, device_array_like, mapped_array, to_device, and the conversion
of a host array a kernel launch makes) through the same CachingPool over a driver that counts
its allocations. A block goes back to the pool when the last array or view over it dies, as the
EMM's finalizer does on a GPU, and the pool is the one hr.cuda.memory_allocated() reports.
On a real device tests/test_cuda_memory.py checks the EMM plugin itself."""
import gc
import sys
import weakref

import numpy as np
import pytest

import headrace as hr
from headrace.devices.cuda_pool import CachingPool

pytestmark = pytest.mark.cuda

STEPS = 3   # the first step is the warm-up; the simulator runs a step in ~2-4 s


class _Lease:
    """The owner of one pooled allocation: every array made over it (views, reshapes,
    transposes) keeps it alive through its base, so its death means no array uses the block."""
    __slots__ = ("array", "__array_interface__", "__weakref__")

    def __init__(self, array):
        self.array = array
        self.__array_interface__ = array.__array_interface__


class _CountingDriver:
    """Blocks are host buffers (the simulator's device memory); counts what it hands out."""

    def __init__(self):
        self.allocs = self.frees = 0

    def alloc(self, nbytes):
        self.allocs += 1
        return np.empty(nbytes, np.uint8)

    def free(self, block):
        self.frees += 1


class Pooled:
    def __init__(self, pool, driver):
        self.pool, self.driver = pool, driver
        self.pinned = 0     # host pinned/managed arrays (the EMM's host side, not pooled)
        self.unpooled = 0   # device arrays made over memory the pool did not hand out


def _memory(array):
    """What owns the memory under ``array`` (a _Lease for a pooled block). A record a kernel
    indexes (an RNG state) is an np.void over its array's memory."""
    while isinstance(array, (np.ndarray, np.void)) and array.base is not None:
        array = array.base
    return array


@pytest.fixture
def pooled(monkeypatch):
    from headrace.devices import cuda as dev
    if not dev.SIMULATOR:
        pytest.skip("on a GPU the EMM plugin itself is checked (tests/test_cuda_memory.py)")
    cuda = dev.cuda
    sim = sys.modules[type(cuda.device_array(1, np.float32)).__module__]
    driver = _CountingDriver()
    pool = CachingPool(driver.alloc, driver.free)
    state = Pooled(pool, driver)
    fake_array, to_device = sim.FakeCUDAArray, sim.to_device
    pinned_array, managed_array = sim.pinned_array, sim.managed_array

    def lease(shape, dtype, strides=None, order="C"):
        dtype = np.dtype(dtype)
        shape = tuple(shape) if np.iterable(shape) else (int(shape),)
        block, _ = pool.malloc(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
        owner = _Lease(np.ndarray(shape, dtype, buffer=block, strides=strides, order=order))
        weakref.finalize(owner, pool.release, block)
        return np.asarray(owner)

    def pooled_device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
        return fake_array(lease(shape, dtype, strides, order), stream=stream)

    def pooled_to_device(ary, stream=0, copy=True, to=None):
        if to is not None:                       # a copy into an existing array
            return to_device(ary, stream, copy, to)
        host = np.asarray(ary)
        sim.sentry_contiguous(host)
        order = "F" if host.flags.f_contiguous and not host.flags.c_contiguous else "C"
        out = lease(host.shape, host.dtype, order=order)
        np.copyto(out, host)
        return fake_array(out, stream=stream)

    def counted(make):
        def host_array(*args, **kwargs):
            state.pinned += 1
            return make(*args, **kwargs)
        return host_array

    # device_array_like, mapped_array and auto_device call the module's globals; the cuda
    # namespace (and the simulator package it was star-imported from) hold their own names.
    patches = {"device_array": pooled_device_array, "to_device": pooled_to_device,
               "pinned_array": counted(pinned_array), "managed_array": counted(managed_array)}
    originals = {name: getattr(sim, name) for name in patches}
    spaces = [sim, cuda] + [sys.modules[m] for m in ("numba.cuda.simulator",
                                                     "numba.cuda.simulator_init")
                            if m in sys.modules]
    for space in spaces:
        for name, new in patches.items():
            if getattr(space, name, None) is originals[name]:
                monkeypatch.setattr(space, name, new)
    # Every device array (views included) must be over pooled memory, or over memory made
    # before the fixture (buffers kept across runs, such as the index-check flags and random
    # ops' states, that earlier tests allocated): an allocation path the patches above miss
    # would make arrays the pool never sees.
    earlier = {id(m): m for m in (_memory(o._ary) for o in gc.get_objects()
                                   if isinstance(o, fake_array))}
    init = fake_array.__init__

    def checked_init(self, ary, stream=0):
        memory = _memory(ary)
        state.unpooled += not isinstance(memory, _Lease) and id(memory) not in earlier
        init(self, ary, stream)

    monkeypatch.setattr(fake_array, "__init__", checked_init)
    monkeypatch.setattr(dev, "_POOLS", [pool])   # what hr.cuda.memory_allocated() reads
    return state


def _mlp(optimizer):
    """fc -> batch_norm -> relu -> dropout -> fc -> softmax cross entropy, on small shapes."""
    main, startup = hr.Program(), hr.Program()
    main.random_seed = startup.random_seed = 3
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[6])
        label = hr.layers.data("label", shape=[1], dtype="int64")
        h = hr.layers.fc(x, size=8)
        h = hr.layers.batch_norm(h, act="relu")
        h = hr.layers.dropout(h, dropout_prob=0.25)
        logits = hr.layers.fc(h, size=3)
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, label))
        optimizer.minimize(loss)
    return main, startup, loss


def _train(pooled, main, startup, loss, feeds):
    """Driver allocations and bytes in use after each step (the fetched loss is on the host)."""
    # The parameters start on the CPU (the simulator draws random initial values slowly); the
    # CUDA executor moves them to the device at its first step and keeps them there.
    scope = hr.Scope()
    hr.Executor(hr.CPUPlace()).run(startup, scope=scope)
    exe = hr.Executor(hr.CUDAPlace(0))
    allocs, in_use, losses = [], [], []
    for feed in feeds:
        (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        losses.append(float(np.asarray(value).reshape(-1)[0]))
        allocs.append(pooled.driver.allocs)
        in_use.append(hr.cuda.memory_allocated())
        assert hr.cuda.memory_reserved() >= in_use[-1] == pooled.pool.allocated
    return allocs, in_use, losses


def test_steady_state_steps_allocate_nothing_new(pooled):
    # Adam keeps the most state per parameter (two moments, two powers); batch_norm updates
    # running statistics in place; dropout draws from device RNG states and keeps its mask.
    main, startup, loss = _mlp(hr.optimizer.Adam(learning_rate=0.01))
    rng = np.random.default_rng(0)
    # A new batch each step (same shapes), as a training loop feeds.
    feeds = [{"x": rng.standard_normal((4, 6)).astype("float32"),
              "label": rng.integers(0, 3, (4, 1)).astype("int64")} for _ in range(STEPS)]
    # Without the cycle collector, memory a reference cycle keeps alive shows up as growth.
    gc.disable()
    try:
        allocs, in_use, losses = _train(pooled, main, startup, loss, feeds)
    finally:
        gc.enable()
    assert allocs[0] > 0 and in_use[0] > 0, "the pool saw no device allocation"
    assert allocs == [allocs[0]] * STEPS, f"driver allocations after each step: {allocs}"
    assert in_use == [in_use[0]] * STEPS, f"bytes in use after each step: {in_use}"
    assert pooled.pinned == 0, "a step made pinned/managed host arrays"
    assert pooled.unpooled == 0, "device arrays were made outside the pool"
    assert np.isfinite(losses).all() and len(set(losses)) == STEPS   # it trains on real values
