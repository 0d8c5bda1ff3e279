"""Host<->device copies during a step on CUDAPlace (issue 11): only feeds, fetches and
control-flow predicates may copy; every value between ops stays on the device. Copies are
counted at Numba's entry points (cuda.to_device, a device array's copy_to_host/copy_to_device),
and at the conversion of a host array passed to a kernel launch, so a kernel that copies
behind the device module's back is counted too."""
import sys

import numpy as np
import pytest

import headrace as hr
from headrace.ops import default_registry

pytestmark = pytest.mark.cuda

rng = np.random.default_rng(0)


@pytest.fixture
def copies(monkeypatch):
    from headrace.devices import cuda as dev
    cuda = dev.cuda
    counts = {"h2d": 0, "d2h": 0}
    array_type = type(cuda.device_array(1, np.float32))
    to_device, to_host = cuda.to_device, array_type.copy_to_host
    copy_to_device = array_type.copy_to_device

    def counted_to_device(*args, **kwargs):
        counts["h2d"] += 1
        return to_device(*args, **kwargs)

    def counted_copy_to_device(self, *args, **kwargs):
        counts["h2d"] += 1
        return copy_to_device(self, *args, **kwargs)

    def counted_to_host(self, *args, **kwargs):
        counts["d2h"] += 1
        return to_host(self, *args, **kwargs)

    # A kernel launched with a host array converts it (auto_device) and writes it back after:
    # count the conversion too (the write-back is a copy_to_host, counted above).
    devicearray = sys.modules[array_type.__module__]
    auto_device = devicearray.auto_device

    def counted_auto_device(*args, **kwargs):
        devary, converted = auto_device(*args, **kwargs)
        counts["h2d"] += bool(converted)
        return devary, converted

    monkeypatch.setattr(devicearray, "auto_device", counted_auto_device)
    monkeypatch.setattr(cuda, "to_device", counted_to_device)
    monkeypatch.setattr(array_type, "copy_to_device", counted_copy_to_device)
    monkeypatch.setattr(array_type, "copy_to_host", counted_to_host)
    return counts


def _network():
    """x -> h = relu(x W1 + b) -> softmax(relu(h W2 + h)): mul, elementwise_add, relu, softmax
    (the ops with CUDA kernels so far; extend it as more land)."""
    prog = hr.Program()
    b = prog.global_block()
    feeds = {"x": [-1, 6], "w1": [6, 5], "b1": [5], "w2": [5, 5]}
    v = {n: b.create_var(name=n, shape=s, dtype="float32", need_check_feed=True)
         for n, s in feeds.items()}
    h = b.append_op("mul", {"X": v["x"], "Y": v["w1"]}, {"Out": "h"}).output("Out")[0]
    h = b.append_op("elementwise_add", {"X": h, "Y": v["b1"]}, {"Out": "hb"}).output("Out")[0]
    h = b.append_op("relu", {"X": h}, {"Out": "r1"}).output("Out")[0]
    g = b.append_op("mul", {"X": h, "Y": v["w2"]}, {"Out": "g"}).output("Out")[0]
    g = b.append_op("elementwise_add", {"X": g, "Y": h}, {"Out": "gh"}).output("Out")[0]
    g = b.append_op("relu", {"X": g}, {"Out": "r2"}).output("Out")[0]
    b.append_op("softmax", {"X": g}, {"Out": "out"})
    values = {n: rng.standard_normal([3 if d < 0 else d for d in s]).astype("float32")
              for n, s in feeds.items()}
    return prog, values


def test_a_step_copies_only_feeds_and_fetches(copies):
    prog, feed = _network()
    exe = hr.Executor(hr.CUDAPlace(0))
    scope = hr.Scope()
    exe.run(prog, feed=feed, fetch_list=["out"], scope=scope)   # compile and warm up
    for _ in range(2):
        copies.update(h2d=0, d2h=0)
        (got,) = exe.run(prog, feed=feed, fetch_list=["out"], scope=scope)
        assert copies == {"h2d": len(feed), "d2h": 1}
    x, w1, b1, w2 = feed["x"], feed["w1"], feed["b1"], feed["w2"]
    r1 = np.maximum(x @ w1 + b1, 0)
    r2 = np.maximum(r1 @ w2 + r1, 0)
    e = np.exp(r2 - r2.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_fetching_nothing_copies_only_feeds(copies):
    prog, feed = _network()
    exe = hr.Executor(hr.CUDAPlace(0))
    exe.run(prog, feed=feed, fetch_list=[], scope=hr.Scope())
    assert copies == {"h2d": len(feed), "d2h": 0}


def test_a_training_step_copies_only_feeds_and_fetches(copies):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[6])
        h = hr.layers.fc(x, size=5, act="relu")
        loss = hr.layers.mean(hr.layers.fc(h, size=1))
        hr.optimizer.SGD(learning_rate=0.1).minimize(loss)
    registry = default_registry()
    missing = sorted({op.type for p in (main, startup) for op in p.global_block().ops
                      if op.type not in ("feed", "fetch")
                      and registry.kernels_for(op.type).get("cuda") is None})
    # Every op has its CUDA kernel now (tests/test_cuda_hygiene.py): a missing one is a
    # failure here, not a skip that would hide the step this test counts.
    assert not missing, f"ops of the training step without a CUDA kernel: {missing}"
    exe = hr.Executor(hr.CUDAPlace(0))
    scope = hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": rng.standard_normal((4, 6)).astype("float32")}
    exe.run(main, feed=feed, fetch_list=[loss.name], scope=scope)
    copies.update(h2d=0, d2h=0)
    exe.run(main, feed=feed, fetch_list=[loss.name], scope=scope)
    assert copies == {"h2d": 1, "d2h": 1}


def test_a_host_parameter_moves_to_the_device_once(copies):
    # Parameters a startup program (or a load) made on the CPU: the CUDA executor moves each
    # to the device at its first run and keeps it there in the scope; a CPU executor that
    # reads it later moves it back.
    prog, feed = _network()
    for name in ("w1", "w2"):
        prog.global_block().var(name).persistable = True
    params = {n: feed.pop(n) for n in ("w1", "w2")}
    scope = hr.Scope()
    for n, v in params.items():
        scope.set(n, hr.Tensor(v.copy()))
    exe = hr.Executor(hr.CUDAPlace(0))
    (first,) = exe.run(prog, feed=feed, fetch_list=["out"], scope=scope)
    assert copies == {"h2d": len(feed) + len(params), "d2h": 1}
    assert all(not isinstance(scope.find(n).data, np.ndarray) for n in params)
    copies.update(h2d=0, d2h=0)
    (again,) = exe.run(prog, feed=feed, fetch_list=["out"], scope=scope)
    assert copies == {"h2d": len(feed), "d2h": 1}
    np.testing.assert_array_equal(first, again)
    (on_cpu,) = hr.Executor(hr.CPUPlace()).run(prog, feed=feed, fetch_list=["out"],
                                                scope=scope)
    assert all(isinstance(scope.find(n).data, np.ndarray) for n in params)
    np.testing.assert_array_equal(scope.find("w1").data, params["w1"])
    np.testing.assert_allclose(on_cpu, first, rtol=1e-5, atol=1e-6)


def _index_network():
    """ids -> embedding -> fc -> softmax_with_cross_entropy(label): two ops that check
    indices (the ids, the labels) on the device."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        ids = hr.layers.data("ids", shape=[-1, 1], dtype="int64")
        label = hr.layers.data("label", shape=[-1, 1], dtype="int64")
        emb = hr.layers.embedding(ids, size=[7, 4])
        logits = hr.layers.fc(emb, size=3)
        loss = hr.layers.softmax_with_cross_entropy(logits, label)
    w = rng.standard_normal((7, 4)).astype("float32")
    fw = rng.standard_normal((4, 3)).astype("float32")
    fb = np.zeros(3, "float32")
    params = [v.name for v in main.list_vars() if v.persistable]
    scope = hr.Scope()
    for name, value in zip(sorted(params, key=lambda n: ("emb" not in n, n)), (w, fb, fw)):
        scope.set(name, hr.Tensor(value.reshape([d for d in main.global_block().var(name).shape])))
    return main, loss, scope


def test_index_checks_cost_one_read_per_step(copies):
    # Bad ids and labels are recorded on the device and read once at the end of the run, all
    # flags in one copy: no op waits on its own flag.
    main, loss, scope = _index_network()
    exe = hr.Executor(hr.CUDAPlace(0))
    feed = {"ids": np.array([[1], [6], [0]], "int64"), "label": np.array([[2], [0], [1]], "int64")}
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    copies.update(h2d=0, d2h=0)
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert copies == {"h2d": len(feed), "d2h": 1 + 1}   # the fetch and the flags


def test_a_bad_index_on_the_device_names_its_op():
    main, loss, scope = _index_network()
    exe = hr.Executor(hr.CUDAPlace(0))
    feed = {"ids": np.array([[1], [6], [0]], "int64"), "label": np.array([[2], [5], [1]], "int64")}
    with pytest.raises(hr.errors.OpError) as e:
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert e.value.op_type == "softmax_with_cross_entropy"
    assert e.value.source and "test_cuda_copies.py" in e.value.source
    assert "Label value 5" in str(e.value)
    feed["ids"][1, 0] = 9
    with pytest.raises(hr.errors.OpError, match="id 9") as e:
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert e.value.op_type == "lookup_table"
    feed = {"ids": np.array([[1], [6], [0]], "int64"), "label": np.array([[2], [0], [1]], "int64")}
    (good,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)   # fine again after
    assert np.isfinite(good).all()


def test_a_loop_reads_only_its_predicate(copies):
    # A While loop on the device: its frame kernel reads the one-element Condition before each
    # iteration and after the last (the documented control-flow predicates); the body's values
    # stay on the device.
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", [4], dtype="float32", append_batch_size=False)
        n = hr.layers.data("n", [1], dtype="int64", append_batch_size=False)
        i = hr.layers.fill_constant([1], "int64", 0)
        total = hr.layers.fill_constant([4], "float32", 0.0)
        cond = hr.layers.less_than(i, n)
        with hr.layers.While(cond).block():
            step = hr.layers.cast(i, "float32")
            hr.layers.assign(hr.layers.elementwise_add(total, hr.layers.elementwise_mul(x, step)),
                             total)
            hr.layers.increment(i)
            hr.layers.less_than(i, n, cond=cond)
    exe = hr.Executor(hr.CUDAPlace(0))
    scope = hr.Scope()
    exe.run(startup, scope=scope)
    xv = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    for iterations in (3, 0, 3):
        copies.update(h2d=0, d2h=0)
        (got,) = exe.run(main, feed={"x": xv, "n": np.array([iterations], np.int64)},
                         fetch_list=[total], scope=scope)
        np.testing.assert_allclose(got, xv * sum(range(iterations)), rtol=1e-6)
        assert copies == {"h2d": 2, "d2h": 1 + iterations + 1}, iterations
