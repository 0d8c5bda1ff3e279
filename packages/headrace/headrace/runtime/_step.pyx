# cython: language_level=3, boundscheck=False, wraparound=False
"""The executor's per-run step (``Executor._execute_on``): the run's feed and fetch names, its
cached plan, the values list from the scope's persistables and the feed, the checks a new feed
signature gets, the host pool, the plan's run, the persistables written back, the fetched
copies.

Why compiled: for a small program this step is what a run costs beyond the kernels. In Python
it took ~6 us a run of the batch-1 MLP of benchmarks/bench_inference.py (3 fc ops, 6
parameters, one feed, one fetch; ~4.4 us in a loop of runs without kernels: between kernels
the interpreter's objects are out of the caches); compiled, ~3 us less (one process, the
two executors interleaved, CPU time: 19.3 -> 16.3 us a run, its kernels alone 13.4). The
usual case is C: names given as strings or Variables, the cached plan found without the
Python frames of ``Executor._run_plan`` and ``WeakKeyDictionary.get``, a host array from the
scope taken as it is, a well-formed fed ndarray taken as it is (the rule of ``_as_is``), the
feed signature compared to the last one's by shape and dtype without making its tuple, the
fetched ndarray copied. What is rare calls back the Executor's methods
(feed or fetch arguments of another form, a run that prepares its plan, a value to convert or
move to another place, a persistable missing from the scope, a fetch that is not a host
ndarray), so their checks and error messages are the Python ones.
"""
cimport numpy as cnp
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.weakref cimport PyWeakref_NewRef

from weakref import WeakKeyDictionary

from ..framework import Variable
from . import host_memory, scope as scope_mod
from .tensor import Tensor

# What ``run`` returns when the step needs Executor._execute_on's Python path.
SLOW = object()
# The classes and marker the step compares with, as C variables: a module global is a dict
# lookup at each use (ndarray is cnp.ndarray, NumPy's type object imported once).
cdef object _SLOW = SLOW, _Variable = Variable, _WeakKeyDictionary = WeakKeyDictionary

cnp.import_array()


cdef bint _as_is(object value, tuple plain):
    """Whether ``value`` needs none of ``Executor._convert_feed``'s work: an aligned,
    C-contiguous, native ndarray of the fed variable's dtype and shape (-1 matching any
    size). ``plain``: ``(dtype, shape)`` of the variable (executor._plain_feed)."""
    cdef cnp.ndarray a
    cdef tuple want
    cdef Py_ssize_t k, nd, w
    if type(value) is not cnp.ndarray:
        return False
    a = <cnp.ndarray>value
    dtype = plain[0]
    if <object>cnp.PyArray_DESCR(a) is not dtype and value.dtype != dtype:
        return False   # (equal dtypes are mostly one object: NumPy's builtin descriptors)
    if not (cnp.PyArray_IS_C_CONTIGUOUS(a) and cnp.PyArray_ISALIGNED(a)):
        return False
    want = <tuple>plain[1]
    nd = cnp.PyArray_NDIM(a)
    if nd != len(want):
        return False
    for k in range(nd):
        w = want[k]
        if w >= 0 and w != cnp.PyArray_DIMS(a)[k]:
            return False
    return True


cdef bint _same_signature(list values, tuple ids, tuple sig):
    """Whether the fed values in slots ``ids`` have the shapes and dtypes of ``sig`` (a
    signature as ``Step.run`` makes it), for ndarrays only; False is "compare the tuples"."""
    cdef Py_ssize_t k, j, nd
    cdef cnp.ndarray a
    cdef tuple entry, shape
    for k in range(len(ids)):
        v = values[<Py_ssize_t>ids[k]]
        if type(v) is not cnp.ndarray:
            return False
        a = <cnp.ndarray>v
        entry = <tuple>sig[k]
        if <object>cnp.PyArray_DESCR(a) is not entry[1]:
            return False
        shape = entry[0]
        nd = cnp.PyArray_NDIM(a)
        if nd != len(shape):
            return False
        for j in range(nd):
            if <cnp.npy_intp>shape[j] != cnp.PyArray_DIMS(a)[j]:
                return False
    return True


cdef class Step:
    """The per-run work of one ``_RunPlan`` (made once, with it: ``Executor._run_plan``).
    ``direct``: the plan's ``run`` is ``Plan.run`` (not a subclass's)."""
    cdef Py_ssize_t nslots
    cdef tuple loads      # (slot, name) of each persistable the run reads from the scope
    cdef tuple feeds      # (name, slot, variable, (dtype, shape) or None): _RunPlan.feeds
    cdef tuple feed_ids   # their slots, in order (the signature's)
    cdef tuple must       # slots of persistables that must be in the scope (_RunPlan.must_init)
    cdef tuple stores     # (slot, name, has LoD) written back to the scope
    cdef tuple fetches    # (name, slot)
    cdef object plan
    # The last run's feed signature once its first run checked it (None before) and whether
    # its runs use the host pool: a step with the same shapes and dtypes skips the tuple.
    cdef tuple last
    cdef bint last_pooled

    def __init__(self, rp):
        self.nslots = rp.nslots
        self.loads = tuple([(<Py_ssize_t>i, name) for i, name in rp.loads])
        self.feeds = tuple([(name, <Py_ssize_t>i, var, plain)
                            for name, i, var, plain in rp.feeds])
        self.feed_ids = tuple([f[1] for f in self.feeds])
        self.must = tuple([<Py_ssize_t>i for i, _ in rp.must_init])
        self.stores = tuple([(<Py_ssize_t>i, name, has_lod) for i, name, has_lod in rp.stores])
        self.fetches = tuple([(name, <Py_ssize_t>i) for name, i in rp.fetches])
        self.plan = rp.plan
        self.last = None

    def run(self, rp, exe, dict feed, scope, bint return_numpy):
        """Run ``rp`` (whose Step this is) on executor ``exe`` with ``feed`` ({name: value},
        names as the plan's feed names) and ``scope``: the fetched values, in order."""
        cdef list values = [None] * self.nslots
        cdef dict lods = {}
        cdef bint host = exe._host, check, pooled
        cdef Py_ssize_t i
        cdef tuple q, sig
        local = scope._vars
        cdef dict names = local if type(local) is dict else None   # (a C lookup, no method)
        for q in self.loads:
            i = <Py_ssize_t>q[0]
            t = names.get(q[1]) if names is not None else local.get(q[1])
            if t is None:
                t = scope.find(q[1])
                if t is None:
                    continue
            data = t.data
            if not (host and type(data) is cnp.ndarray):
                data = exe._placed(t, data)   # an array of another place, moved here
            values[i] = data
            lod = t.lod
            if lod:
                lods[i] = lod
        for q in self.feeds:
            i = <Py_ssize_t>q[1]
            value = feed[q[0]]
            if q[3] is not None and _as_is(value, <tuple>q[3]):
                values[i] = value
                continue
            value, lod = exe._convert_feed(q[2], value)
            values[i] = value
            if lod:
                lods[i] = lod
        for i in self.must:
            if values[i] is None:
                exe._check_initialized(rp, values)   # raises, naming the variable and op
        # Kernels' outputs are checked against their declarations on the first run of each
        # feed signature (shapes and dtypes): kernels' results depend on little else, and
        # every later step runs unchecked.
        sig = self.last
        if sig is not None and _same_signature(values, self.feed_ids, sig):
            check, pooled = False, self.last_pooled
        else:
            sig = tuple([(getattr(values[<Py_ssize_t>i], "shape", None),
                          getattr(values[<Py_ssize_t>i], "dtype", None))
                         for i in self.feed_ids])
            check = sig not in rp.checked
            # The run's arrays come from the host pool where a run of this signature
            # allocates enough to pay for it (host_memory.pool_pays; judged on its first run).
            pooled = rp.pooled.get(sig, True)
        pool = exe._pool if pooled else None
        if pool is not None:
            served, handler = pool.served(), pool.enter()
        try:
            checks = exe._checks
            if checks is None:
                self.plan.run(values, lods, check)
            else:
                with checks():   # the device's checks its kernels left to the run's end
                    self.plan.run(values, lods, check)
        finally:
            if pool is not None:
                pool.leave(handler)
                if check and len(rp.pooled) < 64:
                    rp.pooled[sig] = host_memory.pool_pays(pool.served() - served)
        if sig is not self.last:
            if check and len(rp.checked) < 64:
                rp.checked.add(sig)
            if sig in rp.checked:
                self.last, self.last_pooled = sig, rp.pooled.get(sig, True)
        for q in self.stores:
            i = <Py_ssize_t>q[0]
            v = values[i]
            t = scope.find(q[1])
            if t is None:
                scope.set(q[1], Tensor(v, lods.get(i)))
            else:
                t.data = v
                if q[2]:
                    t.lod = lods.get(i, [])
        cdef list out = []
        for q in self.fetches:
            i = <Py_ssize_t>q[1]
            v = values[i]
            if return_numpy and host and type(v) is cnp.ndarray:   # np.array(copy=True)'s layout
                out.append(cnp.PyArray_NewCopy(<cnp.ndarray>v, cnp.NPY_KEEPORDER))
            else:
                out.append(exe._fetch(q[0], v, lods.get(i), return_numpy))
        return out


def run(exe, program, feed, fetch_list, scope, bint return_numpy, bint prune):
    """The fetched values of a run of ``program`` on executor ``exe`` whose plan is cached and
    whose feed is a dict by name and fetch list a list or tuple of names and Variables; else
    SLOW, without having looked at a value (``_execute_on`` then takes the Python path)."""
    cdef Py_ssize_t k, n
    cdef tuple fetch_names, feed_names
    cdef list keys
    if feed is None:
        feed = {}
    elif type(feed) is not dict:
        return _SLOW
    if type(fetch_list) is list or type(fetch_list) is tuple:
        n = len(fetch_list)
        fetch_names = PyTuple_New(n)
        for k in range(n):
            f = fetch_list[k]
            if type(f) is not str:
                if not isinstance(f, _Variable):
                    return _SLOW   # (the Python path names the item)
                f = (<object>f)._name   # (Variable.name's field)
            Py_INCREF(f)
            PyTuple_SET_ITEM(fetch_names, k, f)
    else:
        return _SLOW
    if len(<dict>feed) == 1:
        for name in <dict>feed:
            if type(name) is not str:
                return _SLOW
            feed_names = (name,)
    else:
        keys = list(<dict>feed)
        for name in keys:
            if type(name) is not str:
                return _SLOW
        keys.sort()
        feed_names = tuple(keys)
    # Executor._run_plan's lookup of a prepared plan (its key; plans by executor, weakly).
    plans = program.__dict__.get("_executor_plans")
    if type(plans) is not _WeakKeyDictionary:
        return _SLOW
    per_program = (<object>plans).data.get(PyWeakref_NewRef(exe, None))
    if type(per_program) is not dict:
        return _SLOW
    rp = (<dict>per_program).get((program._revision, program._random_seed, feed_names,
                                   fetch_names, prune))
    if rp is None:
        return _SLOW
    if scope is None:
        scope = scope_mod._global_scope   # (global_scope())
    return (<Step?>rp.step).run(rp, exe, <dict>feed, scope, return_numpy)
