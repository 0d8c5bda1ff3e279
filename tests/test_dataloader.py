"""hr.io.DataLoader (Fluid's from_generator): batch order, shuffling by seed, drop_last, the
prefetch thread (a full queue means no wait; early exits and errors leave no thread), LoD
batches from variable-length samples, and the checks that name the feed variable."""
import threading
import time
import traceback

import numpy as np
import pytest

import headrace as hr
from headrace.io.feeder import FeedError
from headrace.runtime.tensor import Tensor


def data_vars(lod_level=0):
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = hr.layers.data("x", shape=[2, 3], dtype="float32")
        label = hr.layers.data("label", shape=[1], dtype="int64")
        words = hr.layers.data("words", shape=[1], dtype="int64", lod_level=max(lod_level, 1))
    return main, x, label, words


def numbered(n):
    """Samples whose content says their position: x all i, label i."""
    def reader():
        for i in range(n):
            yield np.full((2, 3), i, np.float64), i
    return reader


def labels_of(loader):
    return [b["label"][:, 0].tolist() for b in loader()]


def loader_for(feed, capacity=4, **kw):
    return hr.io.DataLoader.from_generator(feed_list=feed, capacity=capacity, **kw)


def reader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("headrace-")]


# -- order, batching, return_list --------------------------------------------------------------

def test_batches_keep_the_generators_order_and_convert_to_the_variables():
    _, x, label, _ = data_vars()
    loader = loader_for([x, label]).set_sample_generator(numbered(10), batch_size=4,
                                                         drop_last=False)
    batches = list(loader())
    assert [b["label"][:, 0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    first = batches[0]
    assert first["x"].dtype == np.float32 and first["x"].shape == (4, 2, 3)
    assert first["label"].dtype == np.int64 and first["label"].shape == (4, 1)
    np.testing.assert_array_equal(first["x"][:, 0, 0], [0, 1, 2, 3])
    assert labels_of(loader) == labels_of(loader)   # each call is a new pass, same order


def test_sample_list_and_batch_generators_and_return_list():
    _, x, label, _ = data_vars()
    lists = loader_for([x, label], return_list=True)
    lists.set_sample_list_generator(hr.io.reader.batch(numbered(5), 2))
    got = [b[1][:, 0].tolist() for b in lists()]
    assert got == [[0, 1], [2, 3], [4]]

    def batches():
        for i in range(3):
            yield np.full((2, 2, 3), i, np.float32), np.array([[i], [i + 1]])
    by_batch = loader_for([x, label]).set_batch_generator(batches)
    assert [b["label"][:, 0].tolist() for b in by_batch()] == [[0, 1], [1, 2], [2, 3]]

    def dicts():
        yield {"label": np.zeros((1, 1), np.int64), "x": np.ones((1, 2, 3), np.float32)}
    (only,) = list(loader_for([x, label]).set_batch_generator(dicts)())
    assert only["x"].sum() == 6


def test_drop_last():
    _, x, label, _ = data_vars()
    keep = loader_for([x, label]).set_sample_generator(numbered(10), 4, drop_last=False)
    drop = loader_for([x, label]).set_sample_generator(numbered(10), 4)  # Fluid's default
    assert [len(b) for b in labels_of(keep)] == [4, 4, 2]
    assert [len(b) for b in labels_of(drop)] == [4, 4]
    exact = loader_for([x, label]).set_sample_generator(numbered(8), 4, drop_last=True)
    assert [len(b) for b in labels_of(exact)] == [4, 4]
    assert list(hr.io.reader.batch(numbered(3), 2, drop_last=True)()) != []


# -- shuffling -----------------------------------------------------------------------------------

def shuffled_passes(seed, passes=3, n=50, buf_size=100):
    _, x, label, _ = data_vars()
    loader = loader_for([x, label]).set_sample_generator(
        hr.io.reader.shuffle(numbered(n), buf_size, seed=seed), batch_size=n)
    return [labels_of(loader)[0] for _ in range(passes)]


def test_shuffle_by_seed_repeats_for_a_seed_and_differs_between_seeds_and_passes():
    a, b, c = shuffled_passes(7), shuffled_passes(7), shuffled_passes(8)
    assert a == b
    assert a != c
    for order in a + c:
        assert sorted(order) == list(range(50)) and order != list(range(50))
    assert a[0] != a[1] != a[2]   # a new order every pass, the sequence set by the seed


def test_shuffle_stays_within_its_buffer_windows():
    (order,) = shuffled_passes(3, passes=1, n=20, buf_size=5)
    for w in range(4):
        assert sorted(order[5 * w:5 * w + 5]) == list(range(5 * w, 5 * w + 5))
    assert order != list(range(20))


# -- the prefetch thread ------------------------------------------------------------------------

def test_a_full_queue_means_the_consumer_does_not_wait_on_a_slow_generator():
    # The generator takes DELAY per batch. Once the queue holds `capacity` batches, taking them
    # costs the consumer next to nothing: it never waits for the generator (a loader without
    # the thread would wait DELAY for each). The batch after them takes the generator LAST
    # seconds, and that one is waited for. Margins for a loaded 2-core machine: a ready batch
    # must come within DELAY / 3 (a scheduling hiccup of 100 ms passes), the late one after at
    # least LAST / 3.
    delay, last, capacity = 0.3, 1.5, 3
    _, x, label, _ = data_vars()

    def slow():
        for i in range(capacity + 1):
            time.sleep(delay if i < capacity else last)
            yield np.zeros((1, 2, 3), np.float32), np.array([[i]])
    epoch = iter(loader_for([x, label], capacity=capacity).set_batch_generator(slow))
    deadline = time.monotonic() + 60
    while epoch.qsize() < capacity:
        assert time.monotonic() < deadline, "the reader thread did not fill the queue"
        time.sleep(0.01)
    waits = []
    for i in range(capacity):
        t0 = time.perf_counter()
        batch = next(epoch)
        waits.append(time.perf_counter() - t0)
        assert batch["label"][0, 0] == i
    assert max(waits) < delay / 3, waits
    assert epoch.wait_seconds < delay / 3
    t0 = time.perf_counter()
    next(epoch)                       # the queue was empty: this one waits for the generator
    assert time.perf_counter() - t0 > last / 3
    with pytest.raises(StopIteration):
        next(epoch)
    epoch.thread.join(5)
    assert not epoch.thread.is_alive()


def test_breaking_out_of_a_pass_leaves_no_thread_running():
    _, x, label, _ = data_vars()
    closed = threading.Event()

    def endless():   # a reader that never ends on its own, and says when it is closed
        try:
            i = 0
            while True:
                yield np.zeros((2, 3)), i
                i += 1
        finally:
            closed.set()
    loader = loader_for([x, label], capacity=2).set_sample_generator(endless, batch_size=2)
    for n, _batch in enumerate(loader()):
        if n == 3:
            break
    assert closed.wait(10)            # the generator was closed, in its own thread
    assert not reader_threads()

    epoch = iter(loader)              # a pass held by a name: a new pass ends it
    next(epoch)
    first = epoch.thread
    second = iter(loader)
    assert not first.is_alive()
    next(second)
    loader.reset()                    # and so does reset()
    assert not second.thread.is_alive()

    def body_fails():
        for _ in loader():
            raise KeyError("in the loop body")
    with pytest.raises(KeyError):
        body_fails()
    assert not reader_threads()


def test_a_generator_error_is_raised_in_the_loop_with_its_traceback():
    _, x, label, _ = data_vars()

    def broken_reader():
        yield np.zeros((2, 3)), 0
        raise ZeroDivisionError("bad record 17")
    loader = loader_for([x, label]).set_sample_generator(broken_reader, batch_size=1)
    seen = []
    with pytest.raises(ZeroDivisionError, match="bad record 17") as info:
        for batch in loader():
            seen.append(batch)
    assert len(seen) == 1
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "broken_reader" in frames and "test_a_generator_error_is_raised_in_the_loop_" \
        "with_its_traceback" in frames
    assert not reader_threads()


def test_buffered_reads_ahead_in_order_and_passes_errors_on():
    assert list(hr.io.reader.buffered(lambda: iter(range(100)), 7)()) == list(range(100))

    def fails():
        yield 1
        raise ValueError("late")
    with pytest.raises(ValueError, match="late"):
        list(hr.io.reader.buffered(fails, 2)())
    for ahead in (hr.io.reader.buffered(lambda: iter(range(10 ** 9)), 3),
                  hr.io.reader.xmap_readers(abs, lambda: iter(range(10 ** 9)), 2, 4)):
        it = ahead()
        next(it)
        it.close()      # what a loop left early does to the generator
        assert not reader_threads()


# -- LoD batches ----------------------------------------------------------------------------------

def test_variable_length_samples_make_a_lod_batch_that_a_sequence_op_reads():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        words = hr.layers.data("words", shape=[1], dtype="int64", lod_level=1)
        label = hr.layers.data("label", shape=[1], dtype="int64")
        total = hr.layers.sequence_pool(hr.layers.cast(words, "float32"), "sum")
    sentences = [[3, 1, 4], [1], [5, 9, 2, 6], [], [5, 3]]

    def reader():
        for k, s in enumerate(sentences):
            yield np.array(s, np.int32), k      # int32 ids: converted within the kind
    loader = loader_for([words, label]).set_sample_generator(reader, 3, drop_last=False)
    exe = hr.Executor()
    batches = list(loader())
    first = batches[0]["words"]
    assert isinstance(first, Tensor) and first.lod == [[0, 3, 4, 8]]
    assert first.data.dtype == np.int64 and first.data.shape == (8, 1)
    np.testing.assert_array_equal(first.data[:, 0], [3, 1, 4, 1, 5, 9, 2, 6])
    assert batches[1]["words"].lod == [[0, 0, 2]]   # an empty sentence keeps its place
    (plain,) = list(loader_for([words, label]).set_sample_list_generator(
        lambda: iter([[([], 0), ([7, 8], 1)]]))())   # an empty list is no float64 to refuse
    assert plain["words"].lod == [[0, 0, 2]] and plain["words"].data.dtype == np.int64
    sums = [exe.run(main, feed=b, fetch_list=[total])[0][:, 0] for b in batches]
    np.testing.assert_array_equal(np.concatenate(sums), [sum(s) for s in sentences])


def test_two_level_lod_from_nested_samples():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        paras = hr.layers.data("paras", shape=[2], dtype="float32", lod_level=2)
    docs = [[[[1, 2], [3, 4]], [[5, 6]]], [[[7, 8]]]]   # 2 docs: 2 sentences, then 1

    def reader():
        for d in docs:
            yield (d,)
    (batch,) = list(loader_for([paras]).set_sample_generator(reader, 2)())
    assert batch["paras"].lod == [[0, 2, 3], [0, 2, 3, 4]]
    np.testing.assert_array_equal(batch["paras"].data, np.arange(1, 9).reshape(4, 2))

    def batch_reader():   # a batch generator may give a LoD variable its sequences, or a Tensor
        yield [docs]
        yield [hr.create_lod_tensor(np.zeros((3, 2), np.float32), [[1, 1], [2, 1]])]
    got = list(loader_for([paras]).set_batch_generator(batch_reader)())
    assert got[0]["paras"].lod == [[0, 2, 3], [0, 2, 3, 4]]
    assert got[1]["paras"].lod == [[0, 1, 2], [0, 2, 3]]


# -- errors name the variable, what it expects and what came ------------------------------------

@pytest.mark.parametrize("sample, pattern", [
    ((np.zeros(7), 1, [1]), r"variable 'x' \(field 0 of sample #1 in batch #0\) has the wrong "
                            r"shape\n  expected: \[2, 3\] .*\n  found:    \[7\]"),
    ((np.zeros((2, 3)), 1.5, [1]), r"variable 'label' .* wrong dtype\n  expected: int64.*\n"
                                   r"  found:    float64"),
    ((np.zeros((2, 3)), 1, [[1, 2], [3]]), r"variable 'words' .* (ragged|wrong shape)"),
    ((np.zeros((2, 3)), 1, 5), r"variable 'words' .* is not a sequence"),
    ((np.zeros((2, 3)), 1), r"sample #1 in batch #0 does not have one field per feed variable"
                            r"\n  expected: a tuple of 3 \(x, label, words\)\n  found:    tuple "
                            r"of 2"),
    ((np.zeros((2, 3)), "one", [1]), r"variable 'label' .* wrong dtype\n.*\n  found:    text"),
])
def test_a_sample_that_does_not_fit_names_the_variable(sample, pattern):
    _, x, label, words = data_vars()

    def reader():
        yield np.zeros((2, 3)), 0, [1, 2]
        yield sample
    loader = loader_for([x, label, words]).set_sample_generator(reader, 2)
    with pytest.raises(FeedError, match=pattern):
        list(loader())
    assert not reader_threads()


def test_rows_that_differ_where_the_variable_leaves_the_size_open_are_named():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        free = hr.layers.data("free", shape=[-1, -1], dtype="float32", append_batch_size=False)
        seqs = hr.layers.data("seqs", shape=[-1, -1], dtype="float32", lod_level=1,
                              append_batch_size=False)
    dense = loader_for([free]).set_sample_list_generator(
        lambda: iter([[(np.zeros(3),), (np.zeros(3),), (np.zeros(4),)]]))
    with pytest.raises(FeedError, match=r"variable 'free' \(field 0 of sample #2 in batch #0\) "
                                        r"differs in row shape from sample #0.*\n  expected: "
                                        r"\[3\]\n  found:    \[4\]"):
        list(dense())
    ragged = loader_for([seqs]).set_sample_list_generator(
        lambda: iter([[(np.zeros((2, 3)),), (np.zeros((1, 5)),)]]))
    with pytest.raises(FeedError, match=r"variable 'seqs' .*sequence #1 in batch #0.* "
                                        r"differs in row shape"):
        list(ragged())


def test_a_batch_that_does_not_fit_names_the_variable():
    _, x, label, _ = data_vars()
    loader = loader_for([x, label]).set_batch_generator(
        lambda: iter([[np.zeros((4, 2, 3), np.float32), np.zeros((3, 2), np.int64)]]))
    with pytest.raises(FeedError, match=r"variable 'label' .*batch #0.*wrong shape\n  expected: "
                                        r"\[batch size\] \+ \[1\]"):
        list(loader())


def test_misuse_is_refused_when_configured():
    _, x, label, _ = data_vars()
    err = hr.io.DataLoaderError
    with pytest.raises(err, match="capacity"):
        hr.io.DataLoader.from_generator(feed_list=[x], capacity=None)
    with pytest.raises(err, match="iterable=False"):
        loader_for([x], iterable=False)
    with pytest.raises(FeedError, match="feed_list"):
        loader_for([])
    loader = loader_for([x])
    with pytest.raises(err, match="no data yet"):
        iter(loader)
    with pytest.raises(err, match="one place"):
        loader.set_batch_generator(lambda: iter([]), places=[hr.CPUPlace(), hr.CPUPlace()])
    with pytest.raises(hr.HeadraceError, match="batch_size"):
        loader.set_sample_generator(numbered(2), batch_size=0)


# -- reader decorators ---------------------------------------------------------------------------

def test_reader_decorators():
    r = hr.io.reader
    a, b = (lambda: iter(range(3))), (lambda: iter("xyz"))
    assert list(r.compose(a, b)()) == [(0, "x"), (1, "y"), (2, "z")]
    with pytest.raises(r.ComposeNotAligned, match="ended after 2 samples"):
        list(r.compose(a, lambda: iter("xy"))())
    assert list(r.compose(a, lambda: iter("xy"), check_alignment=False)()) == [(0, "x"),
                                                                                (1, "y")]
    assert list(r.map_readers(lambda i, c: c * i, a, b)()) == ["", "y", "zz"]
    assert list(r.chain(a, b)()) == [0, 1, 2, "x", "y", "z"]
    assert list(r.firstn(a, 2)()) == [0, 1]
    assert list(r.xmap_readers(lambda i: i * i, lambda: iter(range(20)), 3, 4)()) == \
        [i * i for i in range(20)]
    assert list(r.from_arrays([1, 2], "ab")()) == [(1, "a"), (2, "b")]
    with pytest.raises(hr.HeadraceError, match=r"lengths \[2, 3\]"):
        r.from_arrays([1, 2], "abc")
    calls = []
    cached = r.cache(lambda: (calls.append(1), iter(range(3)))[1])
    assert list(cached()) == list(cached()) == [0, 1, 2] and calls == [1]
    with pytest.raises(hr.HeadraceError, match="callable"):
        r.shuffle([1, 2, 3], 2)


# -- training loop and feeding a program ----------------------------------------------------------

def regression():
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[2], dtype="float32")
        y = hr.layers.data("y", shape=[1], dtype="float32")
        loss = hr.layers.mean(hr.layers.square_error_cost(hr.layers.fc(x, size=1), y))
        test = main.clone(for_test=True)
        hr.optimizer.SGD(learning_rate=0.1).minimize(loss)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((40, 2))
    ys = xs @ [[2.0], [-1.0]] + 0.5
    return main, startup, test, x, y, loss, list(zip(xs, ys))


def test_train_loop_reports_sample_weighted_epoch_metrics_quietly_off_a_terminal(capsys):
    main, startup, test, x, y, loss, samples = regression()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    train = loader_for([x, y]).set_sample_generator(
        hr.io.reader.shuffle(lambda: iter(samples), 40, seed=0), 16, drop_last=False)
    held = loader_for([x, y]).set_sample_generator(lambda: iter(samples), 16, drop_last=False)
    history = hr.io.train_loop(exe, main, train, [loss], epochs=5, scope=scope,
                               test=(test, held))
    out, err = capsys.readouterr()
    assert err == ""                       # stderr is no terminal here: no bar at all
    assert out.count("\n") == 5 and out.startswith("epoch 1/5: ")
    assert [h["batches"] for h in history] == [3] * 5 and history[0]["samples"] == 40
    assert history[-1][loss.name] < history[0][loss.name]
    # the test metric: the mean over the 40 samples (16 + 16 + 8, weighted), recomputed here
    xs = np.array([s[0] for s in samples], np.float32)
    ys = np.array([s[1] for s in samples], np.float32)
    (full,) = exe.run(test, feed={"x": xs, "y": ys}, fetch_list=[loss], scope=scope)
    assert history[-1]["test_" + loss.name] == pytest.approx(float(full), rel=1e-5)
    again = hr.io.test_loop(exe, test, held, {"mse": loss}, scope=scope)
    assert again["mse"] == pytest.approx(float(full), rel=1e-5)
    with pytest.raises(hr.HeadraceError, match="'samples' is taken"):
        hr.io.test_loop(exe, test, held, {"samples": loss}, scope=scope)


def test_train_loop_draws_its_bar_when_asked(capsys):
    pytest.importorskip("tqdm")
    main, startup, _, x, y, loss, samples = regression()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    train = loader_for([x, y]).set_sample_generator(lambda: iter(samples), 8)
    hr.io.train_loop(exe, main, train, [loss], epochs=2, scope=scope, progress=True,
                     verbose=False)
    out, err = capsys.readouterr()
    assert out == "" and "\repoch 1/2: " in err and "batch/s" in err   # tqdm's frames
    assert "/5 [" in err.split("epoch 2/2")[1]   # the second pass knows its length


def test_data_feeder_feeds_a_run():
    main, startup, _, x, y, loss, samples = regression()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    feed = hr.io.DataFeeder([x, y], hr.CPUPlace()).feed(samples[:5])
    assert feed["x"].shape == (5, 2) and feed["y"].dtype == np.float32
    (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert np.isfinite(value).all()


@pytest.mark.cuda
def test_batches_land_on_the_cuda_place():
    from headrace.devices import cuda
    main, startup, _, x, y, loss, samples = regression()
    place = hr.CUDAPlace(0)
    exe, scope = hr.Executor(place), hr.Scope()
    exe.run(startup, scope=scope)
    loader = loader_for([x, y]).set_sample_generator(lambda: iter(samples[:8]), 4,
                                                     places=place)
    batches = list(loader())
    assert all(cuda.is_array(b["x"]) for b in batches)
    (value,) = exe.run(main, feed=batches[0], fetch_list=[loss], scope=scope)
    assert np.isfinite(value).all()
