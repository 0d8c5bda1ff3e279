"""``Executor.run`` and ``Executor.eval`` agree: a pytest plugin that checks it on every program
a test suite runs.

Loaded with ``-p headrace.testing.agreement`` (the repo's tox.ini ``[pytest]`` section loads it
for the whole suite). While a test runs, ``Executor.run`` is wrapped: the first run of each
(program revision, fed names, fetched names) of a program, the signature an Executor compiles
one plan for, is replayed through ``Executor.eval`` on a fresh Executor of the same place, with
copies of the feed and of the scope's values taken before the run. ``eval`` prunes the program
to what the fetches need (``framework.analysis.prune``) where ``run`` executes every op, so the
two agree exactly when the pruning keeps every op the fetched values depend on. Later runs of
the same signature execute the same plans and so prove nothing more about the pruning; they
are not replayed, which keeps the plugin cheap (one extra run per distinct signature).

A run is replayed right after it returns (eval sees the registry, kernels and program the run
saw); a disagreement, including ``eval`` failing where ``run`` succeeded, is collected and fails
the test that made the run at its teardown, so no ``pytest.raises`` of the test can swallow it.
Runs made in other threads are replayed at that teardown (see :meth:`Recorder.after`).

Fetches that cannot agree by nature are not compared; each reason is in :func:`_excluded`.
"""
import threading
import weakref

import numpy as np
import pytest

from ..framework import Program, Variable, analysis, default_main_program
from ..runtime import Executor, Scope, Tensor, global_scope
from ..runtime.place import CPUPlace

__all__ = ["Recorder", "compare"]


class Recorder:
    """Wraps ``Executor.run`` while installed; collects the disagreements it finds."""

    def __init__(self):
        self.problems = []
        self.pending = []  # runs to replay at the test's teardown
        self.checked = 0
        self.skipped = {}  # reason -> count, for the summary line
        self._seen = weakref.WeakKeyDictionary()  # program -> {signature}
        self._lock = threading.Lock()
        self._original = None

    def install(self):
        original = self._original = Executor.run
        recorder = self

        def run(exe, program=None, feed=None, fetch_list=None, scope=None, return_numpy=True,
                feed_var_name="feed", fetch_var_name="fetch", use_program_cache=True):
            case = recorder.before(exe, program, feed, fetch_list, scope)
            out = original(exe, program, feed, fetch_list, scope, return_numpy, feed_var_name,
                           fetch_var_name, use_program_cache)
            if case is not None:
                recorder.after(case, out)
            return out

        run.__doc__, run.__wrapped__ = original.__doc__, original
        Executor.run = run

    def uninstall(self):
        if self._original is not None:
            Executor.run = self._original
            self._original = None

    def take_problems(self):
        with self._lock:
            out, self.problems = self.problems, []
        return out

    def _skip(self, reason):
        with self._lock:
            self.skipped[reason] = self.skipped.get(reason, 0) + 1

    # -- one run ----------------------------------------------------------------------------
    def before(self, exe, program, feed, fetch_list, scope):
        """The case to replay after the run, or None (not a first run, or not comparable)."""
        program = program if program is not None else default_main_program()
        if not isinstance(program, Program) or not isinstance(feed or {}, dict):
            return None  # run reports these errors itself
        if not isinstance(exe.place, CPUPlace):
            # The scope copy below is of host arrays; device values are not copied.
            self._skip("not on the CPU")
            return None
        names = _fetch_names(program, fetch_list)
        if not names:
            return None  # nothing fetched: nothing to compare
        feed = {k.name if isinstance(k, Variable) else k: v for k, v in (feed or {}).items()}
        signature = (program.revision, tuple(sorted(feed)), tuple(names))
        with self._lock:
            seen = self._seen.setdefault(program, set())
            if signature in seen:
                return None
            seen.add(signature)
        block = program.global_block()
        if any(block.find_var(n) is None for n in names) or \
                any(block.find_var(n) is None for n in feed):
            return None  # run reports unknown names itself
        scope = scope if scope is not None else global_scope()
        return (program, program.revision, _copy_feed(feed), _snapshot(program, scope),
                names, exe.place)

    def after(self, case, out):
        """Replay a run at once: eval then sees the state the run saw (a test may swap
        registries, override kernels, edit the program afterwards). A run made in another
        thread is replayed at the test's teardown instead: a test of concurrent runs counts
        what its threads prepare, and a replay inside them would be counted too."""
        case = (*case, [_copy(v) for v in out])
        if threading.current_thread() is threading.main_thread():
            self._replay(*case)
        else:
            with self._lock:
                self.pending.append(case)

    def replay(self):
        """Replay the runs other threads made (see :meth:`after`)."""
        with self._lock:
            pending, self.pending = self.pending, []
        for case in pending:
            self._replay(*case)

    def _replay(self, program, revision, feed, snapshot, names, place, out):
        if program.revision != revision:
            # The test changed the program after running it: eval would prune another graph.
            self._skip("program changed after the run")
            return
        block = program.global_block()
        compared = []
        for i, name in enumerate(names):
            reason = _excluded(program, name, feed)
            if reason is None:
                compared.append(i)
            else:
                self._skip(reason)
        if not compared:
            return
        targets = [block.var(names[i]) for i in compared]
        where = (f"fetch {[names[i] for i in compared]} with feed {sorted(feed)} of a program "
                 f"of {len(block.ops)} ops")
        try:
            evaluated = Executor(place).eval(targets, feed=feed, scope=snapshot)
        except Exception as e:  # noqa: BLE001 - every failure of eval is the finding
            self._problem(f"{where}: run succeeded but eval failed: {type(e).__name__}: {e}")
            return
        with self._lock:
            self.checked += 1
        for i, value in zip(compared, evaluated):
            problem = compare(out[i], value)
            if problem is not None:
                self._problem(f"{where}: '{names[i]}' differs: {problem}")

    def _problem(self, message):
        with self._lock:
            self.problems.append(message)


def _fetch_names(program, fetch_list):
    if fetch_list is None:  # a loaded inference model's fetch ops, as run reads them
        try:
            return Executor._fetch_ops_targets(program)
        except Exception:  # noqa: BLE001 - a malformed model: run reports it
            return []
    names = []
    for f in fetch_list:
        if isinstance(f, Variable):
            names.append(f.name)
        elif isinstance(f, str):
            names.append(f)
        else:
            return []
    return names


def _copy(value):
    if isinstance(value, Tensor):
        return Tensor(_copy(value.data), [list(level) for level in value.lod])
    if isinstance(value, list):
        return type(value)(_copy(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _copy_feed(feed):
    return {k: _copy(v) for k, v in feed.items()}


def _snapshot(program, scope):
    """A scope holding copies of the values ``scope`` has for the program's persistables (the
    only values a run reads from a scope): the run may update them in place."""
    snap = Scope()
    for block in program.blocks:
        for name, var in block.vars.items():
            if var.persistable:
                value = scope.find(name)
                if value is not None:
                    snap.set(name, _copy(value))
    return snap


def _excluded(program, name, feed):
    """Why the fetch ``name`` cannot agree between run and eval by nature, or None."""
    block = program.global_block()
    if block.var(name).kind == "step_scopes":
        # A record of each step's internal values (for the backward pass), not a value of the
        # program: each run makes its own.
        return "step scopes"
    needs = analysis.prune(block, [name])
    for op in _with_sub_block_ops(needs):
        if op.opdef is not None and "seed" in op.opdef.attrs and not _seeded(op):
            # An unseeded random op draws a different stream in every plan.
            return "unseeded random op"
    kept = {id(op) for op in analysis.prune(block, [name], feed)}
    if any(n in feed for op in needs if id(op) not in kept for n in analysis.writes(op)):
        # Feeding a value the program produces replaces its computation in eval (Fluid's
        # prune), while run executes the producer, which overwrites the fed value. (An op
        # updating a fed value in place, a loop counter or batch_norm's running mean, is not
        # a producer: eval keeps it, and such fetches are compared.)
        return "fed variable also computed"
    return None


def _with_sub_block_ops(ops):
    for op in ops:
        yield op
        for sub in op.sub_blocks():
            yield from _with_sub_block_ops(sub.ops)


def _seeded(op):
    attrs = op.attrs
    return bool(attrs.get("seed") or attrs.get("fix_seed") or op.block.program.random_seed)


def _host(value):
    if isinstance(value, Tensor):
        return np.asarray(value.numpy())
    return value


def compare(a, b):
    """None when fetched values ``a`` and ``b`` agree: same dtype and shape, integers and
    booleans equal, floating values close (the same kernels ran on the same inputs, but
    BLAS may sum in another order); tensor arrays item by item. Else what differs."""
    a, b = _host(a), _host(b)
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return f"{_describe(a)} vs {_describe(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            problem = compare(x, y)
            if problem is not None:
                return f"item {i}: {problem}"
        return None
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{_describe(a)} vs {_describe(b)}"
    if a.dtype.kind in "fc":
        ok = np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        ok = np.array_equal(a, b)
    return None if ok else f"run {a.ravel()[:6]}... vs eval {b.ravel()[:6]}..."


def _describe(v):
    if isinstance(v, list):
        return f"a list of {len(v)}"
    return f"{v.dtype}{list(v.shape)}"


# -- the pytest plugin ----------------------------------------------------------------------
_recorder = Recorder()


def pytest_configure(config):
    _recorder.install()


def pytest_unconfigure(config):
    _recorder.uninstall()


@pytest.fixture(autouse=True)
def _run_eval_agreement():
    """Fails the test whose runs disagree with eval, at its teardown (after replaying the runs
    its other threads made)."""
    _recorder.take_problems()
    yield
    _recorder.replay()
    problems = _recorder.take_problems()
    if problems:
        pytest.fail("Executor.run and Executor.eval disagree:\n  " + "\n  ".join(problems),
                    pytrace=False)


def pytest_terminal_summary(terminalreporter):
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(_recorder.skipped.items()))
    terminalreporter.write_line(
        f"run/eval agreement: {_recorder.checked} run signatures replayed through eval"
        + (f"; fetches not compared: {skipped}" if skipped else ""))
