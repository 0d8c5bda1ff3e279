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
