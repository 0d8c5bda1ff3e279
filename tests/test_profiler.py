"""The op profiler (hr.profiler) and ``headrace profile``: the table's op counts are the
program's (times the steps run; sub-block ops per loop step), it is sorted by time, the Chrome
trace holds one complete event per op run and one per step, and when the profiler is off the
executor runs the plain Plan.run (nothing is left patched, even after an error)."""
import io
import json
import re
import textwrap

import numpy as np
import pytest

import headrace as hr
from headrace.cli import main as cli_main
from headrace.profiler import ProfilerError
from headrace.runtime.plan import Plan

PLAIN_RUN = Plan.run
ROW = re.compile(r"^(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%$")


@pytest.fixture(autouse=True)
def _own_runs_only(monkeypatch):
    """The run/eval agreement plugin (headrace.testing.agreement) replays a first run through
    eval on another Executor, which the profiler would count too: the counts compared here
    are those of the test's own runs."""
    monkeypatch.setattr(hr.Executor, "run",
                        getattr(hr.Executor.run, "__wrapped__", hr.Executor.run))


def _mlp():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        h = hr.layers.fc(x, size=8, act="relu")
        loss = hr.layers.mean(hr.layers.fc(h, size=1))
        hr.optimizer.SGD(0.1).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, loss


def _rows(table):
    rows = {}
    for line in table.splitlines()[2:]:
        m = ROW.match(line)
        assert m, line
        rows[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    return rows


def test_table_counts_equal_the_programs_and_rows_are_sorted_by_time(tmp_path):
    main, exe, scope, loss = _mlp()
    feed = {"x": np.ones((3, 4), np.float32)}
    out, steps = io.StringIO(), 4
    with hr.profiler.profiler("CPU", "total", str(tmp_path / "t.json"), file=out) as prof:
        for _ in range(steps):
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert Plan.run is PLAIN_RUN
    want = {}
    for op in main.global_block().ops:
        want[op.type] = want.get(op.type, 0) + steps
    rows = _rows(out.getvalue())
    assert {t: calls for t, (calls, _) in rows.items()} == want
    totals = [total for _, total in rows.values()]
    assert totals == sorted(totals, reverse=True)
    assert out.getvalue().startswith(f"headrace profile: {steps} steps, ")
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    ops = [e for e in trace if e["cat"] == "op"]
    assert len(ops) == sum(want.values()) and all(e["ph"] == "X" for e in trace)
    assert len([e for e in trace if e["cat"] == "step"]) == steps
    assert {e["name"] for e in ops} == set(want)
    assert prof.stats()["sgd"]["calls"] == want["sgd"]


def test_ops_inside_a_loop_count_once_per_step():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        i = hr.layers.fill_constant([1], "int64", 0)
        v = hr.layers.fill_constant([1], "float32", 1.0)
        limit = hr.layers.fill_constant([1], "int64", 7)
        i, v = hr.layers.while_loop(
            lambda i, v: hr.layers.less_than(i, limit),
            lambda i, v: [hr.layers.increment(i, in_place=False), hr.layers.scale(v, 2.0)],
            [i, v])
    with hr.profiler.profiler(file=io.StringIO()) as prof:
        (got,) = hr.Executor().run(main, fetch_list=[v], scope=hr.Scope())
    assert got[0] == 2.0 ** 7
    stats = prof.stats()
    assert stats["while"]["calls"] == 1 and stats["scale"]["calls"] == 7
    assert stats["increment"]["calls"] == 7 and stats["fill_constant"]["calls"] == 3


def test_nothing_stays_patched_after_an_error_and_misuse_is_refused():
    with pytest.raises(RuntimeError, match="user's error"):
        with hr.profiler.profiler(file=io.StringIO()):
            assert Plan.run is not PLAIN_RUN
            raise RuntimeError("user's error")
    assert Plan.run is PLAIN_RUN
    with pytest.raises(ProfilerError, match="sorted_key"):
        with hr.profiler.profiler(sorted_key="fastest"):
            pass
    with pytest.raises(ProfilerError, match="state"):
        hr.profiler.start_profiler("TPU")
    with pytest.raises(ProfilerError, match="none is running"):
        hr.profiler.stop_profiler()
    hr.profiler.start_profiler()
    try:
        with pytest.raises(ProfilerError, match="already running"):
            hr.profiler.start_profiler()
    finally:
        hr.profiler.stop_profiler(file=io.StringIO())
    assert Plan.run is PLAIN_RUN


def test_reset_and_the_nan_check_still_work_under_the_profiler():
    main, exe, scope, loss = _mlp()
    feed = {"x": np.ones((3, 4), np.float32)}
    with hr.profiler.profiler(file=io.StringIO()) as prof:
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        hr.profiler.reset_profiler()
        assert prof.events == [] and prof.steps == []
        log_prog = hr.Program()
        with hr.program_guard(log_prog, hr.Program()):
            z = hr.layers.log(hr.layers.data("z", shape=[-1], dtype="float32"))
        with pytest.raises(hr.errors.NanInfError, match="op 'log'"):
            hr.Executor(check_nan_inf=True).run(
                log_prog, feed={"z": np.array([1.0, -1.0], np.float32)}, fetch_list=[z],
                scope=hr.Scope())
    assert prof.stats()["log"]["calls"] == 1 and "mul" not in prof.stats()


def _script(tmp_path, body):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_cli_profiles_a_script(tmp_path, capsys):
    script = _script(tmp_path, """
        import sys
        import numpy as np
        import headrace as hr
        main, startup = hr.Program(), hr.Program()
        with hr.program_guard(main, startup):
            x = hr.layers.data("x", shape=[-1, 2], dtype="float32")
            y = hr.layers.relu(hr.layers.scale(x, scale=2.0))
        exe = hr.Executor()
        for _ in range(int(sys.argv[1])):
            exe.run(main, feed={"x": np.ones((2, 2), np.float32)}, fetch_list=[y],
                    scope=hr.Scope())
        print("script done")
        """)
    trace, out = tmp_path / "trace.json", io.StringIO()
    assert cli_main(["profile", "--trace", str(trace), "--sort", "calls", script, "3"],
                    out=out) == 0
    assert "script done" in capsys.readouterr().out
    rows = _rows(out.getvalue().split("headrace profile: Chrome")[0])
    assert {t: c for t, (c, _) in rows.items()} == {"scale": 3, "relu": 3}
    assert len(json.loads(trace.read_text())["traceEvents"]) == 3 + 6


def test_cli_exit_statuses(tmp_path, capsys):
    failing = _script(tmp_path, "raise ValueError('bad data')\n")
    assert cli_main(["profile", "--trace", "", failing], out=io.StringIO()) == 1
    assert "ValueError: bad data" in capsys.readouterr().err
    exits = _script(tmp_path, "import sys\nsys.exit(3)\n")
    assert cli_main(["profile", "--trace", "", exits], out=io.StringIO()) == 3
    assert cli_main(["profile", str(tmp_path / "missing.py")], out=io.StringIO()) == 2
    assert "cannot read the script" in capsys.readouterr().err
    assert cli_main(["profile", "--trace", str(tmp_path / "no" / "t.json"), exits],
                    out=io.StringIO()) == 2
    assert Plan.run is PLAIN_RUN
