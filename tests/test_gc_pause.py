"""The collector is paused while append_backward / gradients / minimize build (gc_pause)."""
import gc

import pytest

import headrace as hr
from headrace.autodiff import backward as bw
from headrace.framework import gc_pause
from headrace.optimizer import Optimizer


def _net():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        h = hr.layers.fc(hr.layers.fc(x, size=4, act="relu"), size=4)
        loss = hr.layers.mean(h)
    return main, startup, x, h, loss


@pytest.fixture
def collector():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def _spy(monkeypatch, seen):
    real = bw._build

    def spy(*args):
        seen.append(gc.isenabled())
        return real(*args)
    monkeypatch.setattr(bw, "_build", spy)


def test_minimize_runs_with_the_collector_paused_and_restores_it(monkeypatch, collector):
    seen, in_update = [], []
    _spy(monkeypatch, seen)
    real = Optimizer._create_optimization_pass

    def update(self, *args):
        in_update.append(gc.isenabled())
        return real(self, *args)
    monkeypatch.setattr(Optimizer, "_create_optimization_pass", update)
    main, startup, x, h, loss = _net()
    with hr.program_guard(main, startup):
        hr.optimizer.SGD(learning_rate=0.1).minimize(loss)
    assert seen == [False] and in_update == [False] and gc.isenabled()
    assert any(op.type == "sgd" for op in main.global_block().ops)


def test_gradients_pause_and_a_failed_pass_restores_the_collector(monkeypatch, collector):
    seen = []
    _spy(monkeypatch, seen)
    main, startup, x, h, loss = _net()
    with hr.program_guard(main, startup):
        g = hr.gradients([loss], [x])
    assert seen == [False] and gc.isenabled() and g[0] is not None
    with pytest.raises(bw.BackwardError):   # h has 4 elements: not a loss
        with hr.program_guard(main, startup):
            hr.append_backward(h)
    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off(monkeypatch, collector):
    seen = []
    _spy(monkeypatch, seen)
    gc.disable()
    main, startup, x, h, loss = _net()
    with hr.program_guard(main, startup):
        hr.optimizer.SGD(learning_rate=0.1).minimize(loss)
    assert seen == [False] and not gc.isenabled()


def test_nested_pauses_end_with_the_outermost(collector):
    with gc_pause.gc_paused():
        with gc_pause.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def _instrs_young(exe, prog, x, out):
    rp = exe._run_plan(prog, (x.name,), (out.name,), False)
    young = {id(o) for g in (0, 1) for o in gc.get_objects(g)}
    made = [i for i in rp.plan.instrs if gc.is_tracked(i)]
    assert made
    return all(id(i) in young for i in made), not any(id(i) in young for i in made)


def test_promotion_is_counted_and_past_a_quarter_is_a_full_collection(collector):
    """What a plan's preparation promotes to the oldest generation is counted; a promotion
    that would take the count past a quarter of that generation (as the last full collection
    left it) is the full collection CPython would have run by then instead (unfreeze's
    promotions are not counted by CPython: a process preparing program after program ran no
    full collection and kept its dead programs; stopping promotion there let dead programs
    pile up twice as long)."""
    import numpy as np
    data = {"x": np.ones((2, 4), np.float32)}
    main, startup, x, h, loss = _net()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)   # a promotion: the count is kept from now on
    gc.collect()
    assert gc_pause._promoted == 0 and gc_pause._long_lived > 0
    exe.run(main, feed=data, fetch_list=[h], scope=scope)
    _, old = _instrs_young(exe, main, x, h)
    assert old and gc_pause._promoted > 0
    full = gc.get_stats()[2]["collections"]
    gc_pause._promoted = gc_pause._long_lived   # past the quarter
    main, startup, x, h, loss = _net()
    exe.run(startup, scope=scope)
    assert gc.get_stats()[2]["collections"] == full + 1 and gc_pause._promoted == 0
    exe.run(main, feed=data, fetch_list=[h], scope=scope)
    _, old = _instrs_young(exe, main, x, h)
    assert old and gc.isenabled() and 0 < gc_pause._promoted <= gc_pause._long_lived // 4
    assert gc.get_stats()[2]["collections"] == full + 1


def test_a_loop_cloning_its_program_keeps_its_dead_programs_few():
    """A process preparing program after program collects the dead ones about as often as
    CPython would: the objects the collector tracks stay flat (each clone's plan made and
    promoted, the old clone dead)."""
    import numpy as np
    data = {"x": np.ones((2, 4), np.float32)}
    main, startup, x, h, loss = _net()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    sizes = []
    for step in range(300):
        exe.run(main.clone(), feed=data, fetch_list=[h], scope=scope)
        if step % 50 == 49:
            sizes.append(len(gc.get_objects()))
    # Between full collections (every ~quarter of the oldest generation) the dead clones
    # pile up, then go: no growth from the first sample on beyond that quarter.
    assert max(sizes[1:]) <= 1.5 * sizes[0], sizes


def test_the_count_is_hooked_at_the_first_promotion_not_at_import():
    """The count of promotions lists the oldest generation after every full collection: a
    process that imports headrace and never prepares a plan (one that only builds programs)
    does not pay for it."""
    import subprocess
    import sys
    code = (
        "import gc, numpy as np, headrace as hr\n"
        "from headrace.framework import gc_pause\n"
        "hooked = lambda: gc_pause._after_collection in gc.callbacks\n"
        "main, startup = hr.Program(), hr.Program()\n"
        "with hr.program_guard(main, startup):\n"
        "    x = hr.layers.data('x', shape=[-1, 4], dtype='float32')\n"
        "    loss = hr.layers.mean(hr.layers.fc(x, size=3))\n"
        "    hr.optimizer.SGD(learning_rate=0.1).minimize(loss)\n"
        "gc.collect()\n"
        "built = hooked()\n"
        "hr.Executor().run(startup, scope=hr.Scope())\n"
        "print(built, hooked())\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["False", "True"]


def test_a_finalizer_run_by_the_collection_may_pause_again(collector):
    """The full collection that replaces a promotion runs the finalizers of what it frees;
    one that builds a program (a paused pass) must not wait on the pause's own lock."""
    import threading
    import numpy as np
    data = {"x": np.ones((2, 4), np.float32)}
    main, startup, x, h, loss = _net()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    gc.collect()
    built = []

    class Builds:
        def __del__(self):
            with gc_pause.gc_paused():
                built.append(_net())

    cycle = Builds()
    cycle.me = cycle   # freed only by a full collection
    del cycle
    gc_pause._promoted = gc_pause._long_lived   # the next promotion is that collection
    done = threading.Event()

    def run():
        exe.run(main, feed=data, fetch_list=[h], scope=scope)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(60), "the collection's finalizer waited on the pause's lock"
    assert built and gc.isenabled()
