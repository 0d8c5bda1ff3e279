"""The Executor: runs a program's global block on a place, with Fluid's feed/fetch semantics.

``run`` executes every op of the program; ``eval`` (the seeds' ``pd.eval``) executes only the
ops the targets depend on. Both compile the block into a :class:`~headrace.runtime.plan.Plan`
once per (program revision, feed names, fetch names) and reuse it, so a training step costs
the kernels plus the small constant per op of the loop.

Values of non-persistable variables live only for the run (Fluid's local scope); persistable
ones (parameters, optimizer state) are read from and written back to the scope.
"""
import threading
import weakref

import numpy as np

from ..errors import HeadraceError
from ..framework import Program, Variable, analysis, default_main_program, gc_pause
from . import host_memory, liveness, nan_inf
from . import _prepare, _step, plan as plan_mod
from .place import CPUPlace, Place
from .scope import global_scope
from .tensor import Tensor, check_lod, create_lod_tensor

__all__ = ["Executor", "FeedError", "FetchError"]


class FeedError(HeadraceError):
    """A fed value that does not match its variable (name, dtype, shape, LoD)."""


class FetchError(HeadraceError):
    """A fetch target that is not in the program or has no value."""


class _RunPlan:
    """A root plan plus the bindings of one feed/fetch signature."""

    def __init__(self, program, place, feed_names, fetch_names, prune, check_nan_inf=False):
        block = program.global_block()
        self.program = program
        self.checked = set()   # feed signatures whose run checked every kernel's outputs
        self.pooled = {}       # feed signature -> whether its runs use the host pool
        fetch_vars = [self._var(block, n, FetchError, "fetch target") for n in fetch_names]
        op_filter = None
        if prune:
            keep = {id(op) for op in analysis.prune(block, [v.name for v in fetch_vars],
                                                    feed_names)}
            op_filter = lambda op: id(op) in keep  # noqa: E731
        prepare = nan_inf.prepare if check_nan_inf else plan_mod.prepare
        self.plan = prepare(block, place, program.registry, op_filter)
        slots = self.plan.slots
        self.feeds = []
        for name in feed_names:
            var = self._var(block, name, FeedError, "fed variable")
            self.feeds.append((name, slots.slot(var), var, _plain_feed(var, place)))
        self.fetches = [(v.name, slots.slot(v)) for v in fetch_vars]
        if not check_nan_inf and liveness.enabled():   # dead values let go of mid-run
            liveness.apply(self.plan, [s for _, s, _, _ in self.feeds] +
                           [s for _, s in self.fetches])
        self._check_inputs(feed_names)
        # Persistables come from the scope; those the run writes go back to it.
        self.loads, self.stores = _prepare.scope_bindings(
            self.plan, {s for _, s, _, _ in self.feeds})
        self.nslots = len(slots)

    @staticmethod
    def _var(block, name, error, what):
        var = block.find_var(name)
        if var is None:
            data = [v.name for v in block.vars.values() if v.need_check_feed]
            hint = f"; data variables: {', '.join(data)}" if data else ""
            raise error(f"{what} '{name}' is not a variable of the program's global "
                        f"block{hint}")
        return var

    def _check_inputs(self, feed_names):
        """A non-persistable variable read before anything writes it must be fed; a
        persistable one must be in the scope when the run starts (``must_init``). One pass
        over ``analysis.exposed_reads`` of the plan's ops finds both (the rule of
        ``analysis.first_unsatisfied_read``, which has no ``must_init`` to collect); the plan
        made that list as it prepared them (Plan.exposed_reads), the fed names not counted."""
        self.must_init, unfed = _prepare.exposed_inputs(self.plan, set(feed_names))
        if unfed is not None:
            op, var = unfed
            raise FeedError(
                f"variable '{var.name}' is read by op '{op.type}' (block {op.block.idx}, op "
                f"#{op.idx}) but is neither fed nor computed before"
                + (" it: add it to feed" if var.need_check_feed else " it"))


def _plans_of(program):
    """The program's cached plans by executor (made on first use: programs built or parsed
    any way get one)."""
    plans = program.__dict__.get("_executor_plans")
    if plans is None:
        plans = program.__dict__["_executor_plans"] = weakref.WeakKeyDictionary()
    return plans


class Executor:
    """Runs programs on ``place`` (CPUPlace() by default, or CUDAPlace(i)).

    ``check_nan_inf``: check every op's floating outputs as it runs and raise a NanInfError at
    the first NaN or Inf, naming the op, where it is, the line that created it and the
    variable (``runtime.nan_inf``); None (the default) reads ``HEADRACE_CHECK_NAN_INF`` (or
    Paddle's ``FLAGS_check_nan_inf``) from the environment now. Off, it costs nothing."""

    def __init__(self, place=None, check_nan_inf=None):
        place = place if place is not None else CPUPlace()
        if not isinstance(place, Place):
            raise HeadraceError(f"Executor takes a CPUPlace or CUDAPlace, got {place!r}")
        self.place = place
        host_memory.tune()   # freed arrays stay in the heap for the next step (see there)
        # Runs allocate their arrays from headrace's caching pool (see host_memory); the
        # device's own arrays have their own pool.
        self._pool = host_memory.pool() if isinstance(place, CPUPlace) else None
        self._check_nan_inf = nan_inf.enabled(check_nan_inf)
        self._device = place.module()
        # A NumPy array in the scope is already where a CPU run reads it (_execute_on's load
        # loop then skips the device's checks: a step at batch 1 is a few microseconds).
        self._host = isinstance(place, CPUPlace)
        # One stream per executor (devices that have streams): its runs launch and copy on it
        # asynchronously, and the host waits only at a fetch (the device module's to_host).
        new_stream = getattr(self._device, "new_stream", None)
        self._stream = new_stream() if new_stream is not None else None
        self._checks = getattr(self._device, "deferred_checks", None)
        # Plans live on the programs they were made for ({executor: {key: _RunPlan}}, weak in
        # the executor), not here: a plan refers to its program, so a cache in the executor
        # would keep every program it ever ran alive (a fresh clone a step leaked them all).
        self._programs = weakref.WeakSet()   # what close() forgets
        self._cache_lock = threading.Lock()  # threads' first runs: one prepares, others wait

    @property
    def check_nan_inf(self):
        """Whether runs check every op's outputs for NaN and Inf (settable)."""
        return self._check_nan_inf

    @check_nan_inf.setter
    def check_nan_inf(self, on):
        self._check_nan_inf = bool(on)
        self.close()   # plans prepared the other way: the next run prepares its own

    def close(self):
        for program in list(self._programs):
            _plans_of(program).pop(self, None)
        self._programs.clear()

    def _run_plan(self, program, feed_names, fetch_names, prune):
        # Keyed by all a plan depends on: the program's content (revision), the seed its
        # random ops derive their streams from, and the run's signature.
        key = (program.revision, program.random_seed, feed_names, fetch_names, prune)
        plans = program.__dict__.get("_executor_plans")
        per_program = plans.get(self) if plans is not None else None
        rp = per_program.get(key) if per_program is not None else None
        if rp is not None:  # every step after the first: dict lookups, no lock
            return rp
        with self._cache_lock:  # a first run: one thread prepares, the others wait for it
            plans = _plans_of(program)
            per_program = plans.get(self)
            stamp = (program.revision, program.random_seed)
            if per_program is None or per_program.get("stamp") != stamp:
                per_program = plans[self] = {"stamp": stamp}  # older plans are stale
                self._programs.add(program)
            rp = per_program.get(key)
            if rp is None:
                with gc_pause.gc_paused(promote=True):
                    rp = _RunPlan(program, self.place, feed_names, fetch_names, prune,
                                  self._check_nan_inf)
                rp.step = _step.Step(rp)   # (the per-run work, compiled)
                per_program[key] = rp
            return rp

    def run(self, program=None, feed=None, fetch_list=None, scope=None, return_numpy=True,
            feed_var_name="feed", fetch_var_name="fetch", use_program_cache=True):
        """Run every op of ``program``'s global block.

        feed: ``{name: value}`` (NumPy array, list, or Tensor with LoD). fetch_list: Variables
        or names; the result is a list in that order, NumPy arrays (``return_numpy``) or Tensors.
        Programs loaded from inference models may carry feed/fetch ops: without a fetch_list,
        their fetch targets are returned in ``col`` order.
        """
        program = program if program is not None else default_main_program()
        if not isinstance(program, Program):
            raise HeadraceError(f"Executor.run takes a Program, got {type(program).__name__}")
        if fetch_list is None:
            fetch_list = self._fetch_ops_targets(program)
        return self._execute(program, feed, fetch_list, scope, return_numpy, prune=False)

    def eval(self, targets, feed=None, scope=None, return_numpy=True):
        """Compute ``targets`` (Variables of one program), running only the ops they need."""
        single = isinstance(targets, Variable)
        targets = [targets] if single else list(targets)
        if not targets or not all(isinstance(t, Variable) for t in targets):
            raise HeadraceError("Executor.eval takes a Variable or a list of Variables")
        program = targets[0].block.program
        out = self._execute(program, feed, targets, scope, return_numpy, prune=True)
        return out[0] if single else out

    @staticmethod
    def _fetch_ops_targets(program):
        ops = [op for op in program.global_block().ops if op.type == "fetch"]
        return [op.input("X")[0] for op in sorted(ops, key=lambda o: o.attr("col"))]

    def _execute(self, program, feed, fetch_list, scope, return_numpy, prune):
        if self._stream is None:
            return self._execute_on(program, feed, fetch_list, scope, return_numpy, prune)
        with self._device.use_stream(self._stream):
            return self._execute_on(program, feed, fetch_list, scope, return_numpy, prune)

    def _execute_on(self, program, feed, fetch_list, scope, return_numpy, prune):
        # A run whose plan is prepared, with a feed by name and a list of fetch targets, is
        # compiled from here on (_step.run); the rest comes this way.
        out = _step.run(self, program, feed, fetch_list, scope, return_numpy, prune)
        if out is not _step.SLOW:
            return out
        feed = feed or {}
        if not isinstance(feed, dict):
            raise FeedError(f"feed must be a dict of name -> value, got {type(feed).__name__}")
        scope = scope if scope is not None else global_scope()
        fetch_names = []
        for f in fetch_list:
            if isinstance(f, Variable):
                fetch_names.append(f.name)
            elif isinstance(f, str):
                fetch_names.append(f)
            else:
                raise FetchError(f"fetch_list items are Variables or names, got {f!r}")
        if len(feed) == 1 and type(next(iter(feed))) is str:   # one fed name: no sorting
            feed_names = (next(iter(feed)),)
        else:
            feed = {k.name if isinstance(k, Variable) else k: v for k, v in feed.items()}
            feed_names = tuple(sorted(feed))
        rp = self._run_plan(program, feed_names, tuple(fetch_names), prune)
        # The rest is compiled (_step.Step.run): the values from the scope and the feed, the
        # first-run checks of a feed signature, the pool, the run, the write-back, the fetches.
        return rp.step.run(rp, self, feed, scope, return_numpy)

    @staticmethod
    def _check_initialized(rp, values):
        for i, op in rp.must_init:
            if values[i] is None:
                raise HeadraceError(
                    f"persistable variable '{rp.plan.slots.vars[i].name}' (read by op "
                    f"'{op.type}', block {op.block.idx}, op #{op.idx}) is not initialized in "
                    f"the scope: run the startup program first")

    def _placed(self, t, data):
        """Scope value ``t``'s ``data`` as this executor's runs read it: an array of another
        place moved here (_moved_here), anything else as it is."""
        if not self._device.is_array(data) and (isinstance(data, np.ndarray)
                                                or hasattr(data, "copy_to_host")):
            data = t.data = self._moved_here(data)
        return data

    def _moved_here(self, data):
        """A scope value that lives on another place (parameters a startup program or a load
        made on the CPU, read by a CUDA executor, or the reverse): moved once and written back
        into the scope, so it stays on this executor's device from run to run."""
        if isinstance(data, np.ndarray):
            return self._device.to_device(np.require(data, requirements=("C", "A")), self.place)
        return data.copy_to_host()

    def _convert_feed(self, var, value):
        lod = None
        if var.lod_level > 0 and _ragged(value):
            value = _nested_to_tensor(var, value)
        if isinstance(value, Tensor):
            value, lod = value.data, value.lod
        expected = var.dtype
        if not isinstance(value, np.ndarray) and not self._device.is_array(value):
            try:
                value = np.asarray(value, dtype=np.dtype(expected))
            except (TypeError, ValueError) as e:
                raise FeedError(f"fed variable '{var.name}': cannot convert {type(value).__name__}"
                                f" to {expected}: {e}") from None
        found = np.dtype(value.dtype).name
        if found != expected:
            raise FeedError(f"fed variable '{var.name}' has the wrong dtype\n  expected: "
                            f"{expected}\n  found:    {found}")
        shape, want = tuple(value.shape), var.shape
        if len(shape) != len(want) or any(w >= 0 and w != s for w, s in zip(want, shape)):
            raise FeedError(f"fed variable '{var.name}' has the wrong shape\n  expected: "
                            f"{list(want)} (-1 matches any size)\n  found:    {list(shape)}")
        if lod:
            try:
                lod = check_lod(lod, shape[0] if shape else 0, f"fed variable '{var.name}'")
            except HeadraceError as e:
                raise FeedError(str(e)) from None
        elif var.lod_level > 0:
            lod = None
        if isinstance(value, np.ndarray):
            # np.require keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d). A fed
            # persistable is copied: in-place updates (optimizers) must not write the caller's.
            value = np.require(value, requirements=("C", "A"))
            if not value.dtype.isnative:  # kernels read native byte order only
                value = value.astype(value.dtype.newbyteorder("="))
            if var.persistable:
                value = value.copy()
            value = self._device.to_device(value, self.place)
        return value, lod

    def _fetch(self, name, value, lod, return_numpy):
        if value is None:
            raise FetchError(f"fetch target '{name}' has no value after the run: it was not "
                             f"fed, computed, or found in the scope")
        if type(value) is np.ndarray and self._host:
            host = value.copy(order="K")   # np.array(copy=True)'s layout
        elif isinstance(value, list):  # tensor arrays, step scopes
            return value
        else:
            host = np.array(self._device.to_host(value), copy=True)
        return host if return_numpy else Tensor(host, lod)



def _plain_feed(var, place):
    """``(dtype, shape)`` of a fed variable whose well-formed arrays the CPU executor takes as
    they are (no LoD, not persistable: nothing to convert, check or copy), else None. Read
    from the VarDesc once per run plan: a step at batch 1 spent most of the executor's time
    on these reads (inference of a small MLP: ~35 us of overhead per run)."""
    if var.lod_level > 0 or var.persistable or var.kind != "lod_tensor" or \
            not isinstance(place, CPUPlace):
        return None
    return np.dtype(var.dtype), tuple(var.shape)


def _ragged(value):
    """A Python list (or tuple) of sequences: what Fluid users feed a LoD variable."""
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        isinstance(v, (list, tuple, np.ndarray)) for v in value)


def _nested_to_tensor(var, value):
    """Nested sequences (as deep as the variable's lod_level) to rows and their LoD, each
    innermost item one row of the variable's row shape."""
    lengths = [[] for _ in range(var.lod_level)]

    def walk(seq, depth):
        lengths[depth].append(len(seq))
        if depth + 1 == var.lod_level:
            return list(seq)
        rows = []
        for sub in seq:
            if not isinstance(sub, (list, tuple, np.ndarray)):
                raise FeedError(f"fed variable '{var.name}' has lod_level {var.lod_level}: "
                                f"expected sequences nested {var.lod_level} deep, found "
                                f"{type(sub).__name__} {sub!r} at depth {depth + 1}"[:300])
            rows.extend(walk(sub, depth + 1))
        return rows

    rows = []
    for seq in value:
        rows.extend(walk(seq, 0))
    row_shape = tuple(int(d) for d in var.shape[1:])
    try:
        data = np.asarray(rows, dtype=np.dtype(var.dtype))
        if data.size and all(d >= 0 for d in row_shape):
            data = data.reshape((len(rows),) + row_shape)
        elif not data.size:
            data = data.reshape((0,) + tuple(max(d, 1) for d in row_shape))
    except (TypeError, ValueError) as e:
        raise FeedError(f"fed variable '{var.name}': cannot make rows of {var.dtype} "
                        f"{list(var.shape[1:])} from the nested sequences: {e}") from None
    return create_lod_tensor(data, lengths)
