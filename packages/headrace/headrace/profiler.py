"""The op profiler (Fluid's ``fluid.profiler``): how long each op type takes in the runs made
while it is on, as a table sorted by time and as a Chrome trace (open it in Perfetto,
https://ui.perfetto.dev, or chrome://tracing)::

    with hr.profiler.profiler("CPU", sorted_key="total", profile_path="trace.json") as prof:
        for _ in range(10):
            exe.run(main, feed=feed, fetch_list=[loss])
    # the table is printed when the block ends; prof.stats() holds the numbers

``headrace profile script.py [args]`` runs a script under it (``headrace.profile_cmd``).

How it costs nothing when off: while a profiler is on, ``Plan.run`` (every plan's, sub-blocks'
included) is replaced by a timing version that runs the ops one at a time
(``Plan.run_each`` with a timer); when it stops, the original method is put back. No flag is
read on the path of an unprofiled run.

What is measured: each op's kernel call, wall-clock (``time.perf_counter_ns``). An op that
owns blocks (``while``, ``conditional_block``) includes the ops of its blocks, which appear in
the table too: the shares of such programs add up to more than 100%. A step is one run of a
program's global block (``Executor.run``/``eval`` minus feeding and fetching); the share of
step is an op type's total over all steps' time. With ``state`` "GPU" or "All", a CUDA op's
time includes waiting for the device (the stream is synchronized after each op), so the
times are the kernels'; with "CPU" they are the launches'.
"""
import contextlib
import json
import os
import sys
import threading
from time import perf_counter_ns

from .errors import HeadraceError
from .runtime.plan import Plan

__all__ = ["Profile", "ProfilerError", "profiler", "reset_profiler", "start_profiler",
           "stop_profiler", "STATES", "SORT_KEYS"]

STATES = ("CPU", "GPU", "All")
SORT_KEYS = ("total", "calls", "mean", "ave", "max", "min")   # "ave": Fluid's name for mean

_plain_run = Plan.run
_active = None            # the Profile being recorded, None when off
_switch = threading.Lock()


class ProfilerError(HeadraceError):
    """A misuse of the profiler (a second one started, a bad state or sort key)."""


class Profile:
    """What one profiling session recorded: ``events`` (the instruction, its start and duration
    in ns, the thread; ``op_events()`` names the op) and ``steps`` (start, duration and thread
    of each global-block run)."""

    def __init__(self, state="CPU"):
        if state not in STATES:
            raise ProfilerError(f"profiler: state must be one of {list(STATES)}, got {state!r}")
        self.state = state
        self.events = []
        self.steps = []
        self._depth = threading.local()
        self._lock = threading.Lock()

    def reset(self):
        with self._lock:
            self.events, self.steps = [], []

    # -- recording (called from the timing Plan.run) --------------------------------------
    def _run(self, plan, values, lods, check):
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        sync = None
        if self.state != "CPU":
            current = getattr(plan.place.module(), "current_stream", None)
            sync = (lambda: current().synchronize()) if current is not None else None
        tid = threading.get_ident()
        record = self.events.append   # list.append is atomic under the GIL

        def timer(instr, start):
            # The op is named later (op_events): its index is a linear search in its block.
            if sync is not None:
                sync()
            record((instr, start, perf_counter_ns() - start, tid))

        start = perf_counter_ns()
        try:
            plan.run_each(values, lods, check, timer)
        finally:
            self._depth.n = depth
            if depth == 0:
                self.steps.append((start, perf_counter_ns() - start, tid))

    # -- results --------------------------------------------------------------------------
    def op_events(self):
        """``[(op type, block index, op index, start ns, duration ns, thread), ...]``."""
        names = {}
        out = []
        for instr, start, dur, tid in list(self.events):
            name = names.get(id(instr))
            if name is None:
                op = instr.op
                name = names[id(instr)] = (op.type, op.block.idx, op.idx)
            out.append((*name, start, dur, tid))
        return out

    def stats(self):
        """``{op type: {"calls", "total", "mean", "min", "max"}}`` (times in ns)."""
        out = {}
        for op_type, _, _, _, dur, _ in self.op_events():
            s = out.get(op_type)
            if s is None:
                out[op_type] = {"calls": 1, "total": dur, "min": dur, "max": dur}
            else:
                s["calls"] += 1
                s["total"] += dur
                s["min"] = min(s["min"], dur)
                s["max"] = max(s["max"], dur)
        for s in out.values():
            s["mean"] = s["total"] / s["calls"]
        return out

    def step_time(self):
        """All steps' time together (ns)."""
        return sum(d for _, d, _ in self.steps)

    def table(self, sorted_key="total"):
        """The per-op-type table as text (times in ms), sorted by ``sorted_key`` (descending;
        None: in order of first run)."""
        key = _sort_key(sorted_key)
        stats = self.stats()
        rows = list(stats.items())
        if key is not None:
            rows.sort(key=lambda kv: kv[1][key], reverse=True)
        step = self.step_time()
        width = max([len("Op type")] + [len(t) for t in stats])
        lines = [f"headrace profile: {len(self.steps)} steps, {step / 1e6:.3f} ms in all "
                 f"(state {self.state}); sorted by {key or 'first run'}; times in ms",
                 f"{'Op type':<{width}}  {'Calls':>8}  {'Total':>10}  {'Mean':>10}  "
                 f"{'Min':>10}  {'Max':>10}  {'Share of step':>13}"]
        for op_type, s in rows:
            share = f"{100.0 * s['total'] / step:.1f}%" if step else "-"
            lines.append(f"{op_type:<{width}}  {s['calls']:>8}  {s['total'] / 1e6:>10.4f}  "
                         f"{s['mean'] / 1e6:>10.4f}  {s['min'] / 1e6:>10.4f}  "
                         f"{s['max'] / 1e6:>10.4f}  {share:>13}")
        return "\n".join(lines) + "\n"

    def chrome_trace(self):
        """The events in Chrome's trace-event format (complete events, microseconds)."""
        events, steps = self.op_events(), list(self.steps)
        starts = [e[3] for e in events] + [s[0] for s in steps]
        origin = min(starts) if starts else 0
        pid = os.getpid()
        trace = [{"name": "step", "cat": "step", "ph": "X", "pid": pid, "tid": tid,
                  "ts": (start - origin) / 1e3, "dur": dur / 1e3}
                 for start, dur, tid in steps]
        trace += [{"name": op_type, "cat": "op", "ph": "X", "pid": pid, "tid": tid,
                   "ts": (start - origin) / 1e3, "dur": dur / 1e3,
                   "args": {"block": block, "op": op_idx}}
                  for op_type, block, op_idx, start, dur, tid in events]
        return {"traceEvents": trace, "displayTimeUnit": "ms"}

    def save_trace(self, path):
        """Write the Chrome trace JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)


def _sort_key(sorted_key):
    if sorted_key is None:
        return None
    if sorted_key not in SORT_KEYS:
        raise ProfilerError(f"profiler: sorted_key must be None or one of {list(SORT_KEYS)}, "
                            f"got {sorted_key!r}")
    return "mean" if sorted_key == "ave" else sorted_key


def _timed_run(plan, values, lods, check=False):
    prof = _active
    if prof is None:   # stopped while another thread was between lookup and call
        return _plain_run(plan, values, lods, check)
    return prof._run(plan, values, lods, check)


def start_profiler(state="CPU"):
    """Start recording (Fluid's ``start_profiler``); returns the Profile."""
    global _active
    prof = Profile(state)
    with _switch:
        if _active is not None:
            raise ProfilerError("profiler: one is already running; stop it first")
        _active = prof
        Plan.run = _timed_run
    return prof


def stop_profiler(sorted_key="total", profile_path=None, file=None):
    """Stop recording; print the table (to ``file``, default stdout) and write the Chrome
    trace to ``profile_path`` when given. Returns the Profile."""
    global _active
    key = _sort_key(sorted_key)   # checked before anything stops
    with _switch:
        prof = _active
        if prof is None:
            raise ProfilerError("profiler: none is running")
        Plan.run = _plain_run
        _active = None
    (file or sys.stdout).write(prof.table(key))
    if profile_path:
        prof.save_trace(profile_path)
    return prof


def reset_profiler():
    """Forget what the running profiler recorded so far (Fluid's ``reset_profiler``)."""
    prof = _active
    if prof is not None:
        prof.reset()


@contextlib.contextmanager
def profiler(state="CPU", sorted_key="total", profile_path=None, file=None):
    """Profile the runs inside the ``with`` block; at its end print the table (to ``file``,
    default stdout) and write the Chrome trace to ``profile_path`` when given."""
    _sort_key(sorted_key)
    prof = start_profiler(state)
    try:
        yield prof
    finally:
        stop_profiler(sorted_key, profile_path, file)
