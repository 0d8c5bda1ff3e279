# cython: language_level=3, boundscheck=False, wraparound=False
"""Plan preparation's per-op loop (``Plan.__init__``), compiled: the first step of a large
program prepares every op once (1603 ops, ~6,000 names for a 200-layer fc net with its SGD
step), and in Python the loop itself (the slot walk, the kernel and info of each op, the
bookkeeping between them) cost ~8 us an op, more than the kernels' makers it calls.

What is per op type is read once per plan (:func:`_op_type`: the slot shape, the type's name
and whether it runs), the kernel and its maker once per (op type, dtype). What is rare stays
in the plan's Python methods: a name the plan's block does not declare (``Plan._slot_of`` and
its error), ``@EMPTY@`` bound to a required input (``Plan._input_slot``), LoD passed on
(``Plan._lod_share``), frame and LoD kernels (``Plan._framed``), and every error's location
(``Plan._where``): the messages are those of the Python methods.
"""
from cpython.long cimport PyLong_FromVoidPtr
from cpython.object cimport PyObject, PyTypeObject, newfunc

from ..errors import HeadraceError, OpError
from ..framework.analysis import owner_exposed_reads
from ..framework.block import Block
from ..ops.grad import EMPTY
from ._loop import Instr
from ._plan_info import SlotVarOf
from ._plan_info cimport slot_names
from .kernel_info import SlotVar

cdef object NONE_SLOT = 0   # plan.NONE_SLOT: unbound optional inputs read slot 0 (None)
cdef str _EMPTY = EMPTY      # (a module global is a dict lookup at each use)
# SlotVar(...) without its Python-level __new__, nor tuple.__new__'s wrapper: tuple's own
# constructor (tuple(iterable) as the subclass), called in C.
cdef newfunc _tuple_new = (<PyTypeObject*>tuple).tp_new
cdef type _SlotVar = SlotVar


cdef class SlotMap:
    """Variable -> slot index, shared by a root plan and its sub-plans.

    ``index``: id(Variable) -> slot; ``vars``: slot -> Variable (slot 0: None); ``facts``: slot
    -> ``(kind, SlotVar)``, the variable's facts, read from its VarDesc once. A plan belongs to
    one revision of its program, so they cannot change under it; reading the desc per op and
    per check made preparing a large program quadratic-ish in cost."""
    cdef public dict index
    cdef public list vars
    cdef public list facts

    def __init__(self):
        self.index = {}
        self.vars = [None]
        self.facts = [None]

    cpdef object slot(self, var):
        """The slot of Variable ``var``, given one the first time it is asked for."""
        key = PyLong_FromVoidPtr(<void*>var)   # id(var), without calling the builtin
        i = self.index.get(key)
        if i is None:
            i = len(self.vars)
            self.index[key] = i
            self.vars.append(var)
            self.facts.append(_facts(var))
        return i

    def __len__(self):
        return len(self.vars)


cdef tuple _facts(var):
    """``(kind, SlotVar)`` of Variable ``var``, from its ``meta()`` (which the variable keeps:
    building the program read it already) and its persistable flag."""
    m = var._meta   # meta(), kept by the variable (framework/_build.pyx reads it so too)
    if m is None:
        m = var.meta()   # VarMeta: (name, shape, dtype, lod_level, kind)
    cdef tuple args = (((<tuple>m)[0], (<tuple>m)[2], (<tuple>m)[1], (<tuple>m)[3],
                        var.desc.persistable),)
    return ((<tuple>m)[4], _tuple_new(_SlotVar, <PyObject*>args, NULL))


cdef tuple _op_type(opdef):
    """What a plan reads once per op type: ``((Slot, name, duplicable), ...)`` of the inputs,
    ``((name, duplicable), ...)`` of the outputs, the type's name, whether it runs
    (analysis.runs: ``no_kernel`` ops, feed and fetch, are bound by the executor itself) and
    per output whether a first run checks it (not an intermediate one: Plan._check_outputs)."""
    return (tuple([(s, s.name, s.duplicable) for s in opdef.inputs]),
            tuple([(s.name, s.duplicable) for s in opdef.outputs]),
            opdef.type, not opdef.no_kernel,
            tuple([not s.intermediate for s in opdef.outputs]))


cdef class _Walk:
    """The state the slot walk reads for every name: one per plan being prepared."""
    cdef object plan
    cdef dict by_name, local
    cdef list facts
    cdef SlotMap slots
    cdef set lod_slots

    def __init__(self, plan):
        self.plan = plan
        self.by_name = plan._by_name
        self.slots = plan.slots
        self.facts = self.slots.facts
        self.local = plan.block.vars
        self.lod_slots = plan.lod_slots

    cdef object first_sight(self, op, name, str role):
        """The slot of ``name`` (not ``@EMPTY@``) seen for the first time in the plan:
        ``Plan._slot_of``'s usual case, inlined (an undeclared name takes its path and
        error). The plan's ops are its block's: a name declared there is found first."""
        var = self.local.get(name)
        if var is None:
            var = op.block._find_var_recursive(name)
            if var is None:
                return self.plan._slot_of(op, name, role)
        i = self.slots.slot(var)
        self.by_name[name] = i
        # SlotVar (name, dtype, shape, lod_level, persistable); once per name: facts do not
        # change.
        if (<tuple>(<tuple>self.facts[i])[1])[3] > 0:
            self.lod_slots.add(i)
        return i

    cdef inline object in_slot(self, op, s, name):
        i = self.by_name.get(name)   # (a name seen before is > 0 here; @EMPTY@ is never here)
        if i is not None:
            return i
        if name == _EMPTY:
            return self.plan._input_slot(op, s, name)   # None, or its error
        return self.first_sight(op, name, "input")

    cdef inline object out_slot(self, op, name):
        i = self.by_name.get(name)
        if i is not None:
            return i
        if name == _EMPTY:
            return -1   # a gradient nobody needs: computed, never stored
        return self.first_sight(op, name, "output")

    cdef tuple resolve(self, op, tuple shape, list ins, list outs, tuple float_dtypes):
        """``(in_ids, out_ids, dtype)`` of ``op``: per input slot of ``shape`` (the op type's,
        :func:`_op_type`) its slot index or tuple of them (``()``/0 when unbound), per output
        slot likewise (``()``/-1), and the kernel's dtype: the first floating input's, else
        the first input's."""
        cdef tuple slots_in = <tuple>shape[0], slots_out = <tuple>shape[1], entry, ids
        cdef Py_ssize_t k, j, n_in = len(slots_in), n_out = len(slots_out)
        cdef list in_ids = [None] * n_in, out_ids = [None] * n_out
        cdef list facts = self.facts
        cdef object dtype = None, d, s, n, first, names   # (names: the op's, tuple or list)
        cdef bint floating = False   # dtype is a floating one: no later input changes it
        for k in range(n_in):
            entry = <tuple>slots_in[k]   # (Slot, name, duplicable)
            s = entry[0]
            names = slot_names(ins, entry[1])
            if not names:
                in_ids[k] = () if entry[2] else NONE_SLOT
                continue
            if entry[2]:
                ids = tuple([self.in_slot(op, s, n) for n in names])
                in_ids[k] = ids
                first = NONE_SLOT
                for j in range(len(ids)):
                    first = ids[j]
                    if first != 0:
                        break
            else:
                first = self.in_slot(op, s, names[0])
                in_ids[k] = first
                if first == 0 and len(names) > 1:   # a file's [@EMPTY@, x, ...]
                    for n in names:
                        if n != _EMPTY:
                            self.plan._slot_var(n)
                            first = self.by_name[n]
                            break
            if not floating and first != 0:
                d = (<tuple>(<tuple>facts[first])[1])[1]   # its SlotVar's dtype
                if d in float_dtypes:
                    dtype, floating = d, True
                elif dtype is None:
                    dtype = d
        for k in range(n_out):
            entry = <tuple>slots_out[k]   # (name, duplicable)
            names = slot_names(outs, entry[0])
            if not names:
                out_ids[k] = () if entry[1] else -1
            elif entry[1]:
                out_ids[k] = tuple([self.out_slot(op, n) for n in names])
            else:
                out_ids[k] = self.out_slot(op, names[0])
        return tuple(in_ids), tuple(out_ids), dtype


cdef object _seed(dict attrs, base, block_idx, op_idx):
    """The seed of a random op: its own ``seed`` attribute, else one derived from the
    program's ``random_seed`` ``base`` and the op's place, given as ``(base, block index, op
    index)`` for its info to derive if a kernel reads it (kernel_info.derived_seed), else None
    (nondeterministic). Ops whose definition names a ``seed_attr`` had the program's seed
    written into them when built (framework/seeds.py), which crosses the wire; the derived one
    serves the others (rnn's dropout), in this process only."""
    own = attrs.get("seed", 0)
    if own:
        return int(own)
    return (base, block_idx, op_idx) if base else None


cdef dict _attrs_of(op):
    """``op.attrs``: a new dict of the op's decoded attributes, of new lists (a kernel maker
    may change what it is given). An op keeps its attributes decoded (Operator._attrs_but):
    copied here, without the property's Python frames and comprehension, which cost a fresh
    1603-op program's preparation ~2 ms; an op without them decodes its desc there."""
    kept = op._attrs_kept
    if kept is None:
        return op.attrs
    cdef dict out = (<dict>kept).copy()
    for k, v in (<dict>kept).items():
        if type(v) is list:
            out[k] = list(v)
    return out


cdef bint _owns_blocks(dict attrs):
    """Whether an op with the decoded attributes ``attrs`` owns blocks (Operator.sub_blocks
    not empty: a BLOCK attribute decodes to its Block, a BLOCKS one to a list of them)."""
    for v in attrs.values():
        if type(v) is Block or (type(v) is list and v and type((<list>v)[0]) is Block):
            return True
    return False


cdef int _exposed(op, list io, dict attrs, set written, set seen, list exposed) except -1:
    """analysis.exposed_reads' step for ``op``, appended to ``exposed`` (its loop over a plain
    op's slots, compiled: the names each op reads before any earlier op wrote them). An op
    that keeps its attributes decoded owns no block (Operator._attrs_but: those with a block
    reference are not kept), so only the others' attributes are searched for one."""
    if op._attrs_kept is None and _owns_blocks(attrs):
        exposed.extend(owner_exposed_reads(op, written, seen))
        return 0
    cdef tuple pair
    for pair in <list>io[0]:
        for name in <tuple>pair[1]:
            if name not in written and name not in seen and name != _EMPTY:
                seen.add(name)
                exposed.append((op, name))
    for pair in <list>io[1]:
        for name in <tuple>pair[1]:
            written.add(name)   # (set.update of a tuple cost ~4x the adds)
    return 0


cdef tuple _output_checks(tuple out_ids, tuple mask, list facts, dict dtypes):
    """What ``_loop.run_checked`` checks of an instruction with ``out_ids`` (``Instr.checks``):
    per stored output of a slot ``mask`` marks (the op type's outputs but its intermediate
    ones) whose variable is a ``lod_tensor`` (``facts``: slot -> (kind, SlotVar); the rule,
    Plan._check_outputs, passes any other kind), ``slot, dtype, rank``: the NumPy dtype of
    its declared one (``dtypes``: name -> np.dtype; None where NumPy lacks it) and the
    declared rank (-1: no dims declared, not checked). Made as the plan prepares the op,
    while its facts are at hand: the first run looking them up per output spent ~0.5 us an
    output on objects gone cold since."""
    cdef Py_ssize_t j
    cdef object o, x
    cdef list c
    if len(out_ids) == 1 and mask[0]:   # the usual op: one output
        o = out_ids[0]
        if type(o) is int:
            return _one_check(o, facts, dtypes)
    c = []
    for j in range(len(out_ids)):
        if not mask[j]:
            continue
        o = out_ids[j]
        for x in ((o,) if type(o) is int else <tuple>o):
            c.extend(_one_check(x, facts, dtypes))
    return tuple(c) if c else ()


cdef tuple _one_check(i, list facts, dict dtypes):
    if i <= 0:
        return ()   # unbound or @EMPTY@: nothing stored
    cdef tuple f = <tuple>facts[<Py_ssize_t>i]
    if f[0] != "lod_tensor":
        return ()
    cdef tuple sv = <tuple>f[1]   # SlotVar: (name, dtype, shape, lod_level, persistable)
    declared = sv[2]
    return (i, dtypes.get(sv[1]), len(declared) if declared else -1)


def output_checks(tuple out_ids, tuple mask, list facts, dict dtypes):
    """``_output_checks`` (Plan._checks_of: an instruction made elsewhere)."""
    return _output_checks(out_ids, mask, facts, dtypes)


def compile_ops(plan, ops, op_filter, info_type, tuple float_dtypes, set plain_types, refuse,
                dict np_dtypes):
    """Append to ``plan.instrs`` the instruction of each op of ``ops`` (the plan's block's, in
    order) that ``op_filter`` keeps (None: all) and that runs, and to ``plan.exposed_reads``
    ``(op, name)`` for each name they read before any of them writes it (analysis.exposed_reads
    of the same ops: the executor's feed and scope checks). ``info_type``: the KernelInfo
    class a plan makes (kernel_info._PlanInfo); ``plain_types``/``refuse``: plan's
    _PLAIN_TYPES and _refuse_undeclared_kind (an array kernel's maker that returns an object
    carrying the old kind attributes is refused). Each instruction gets the outputs its
    first run checks (``Instr.checks``: _output_checks; ``np_dtypes``: name -> np.dtype)."""
    cdef _Walk walk = _Walk(plan)
    cdef list instrs = plan.instrs, exposed = plan.exposed_reads, facts = walk.facts
    cdef set written = set(), seen = set()
    cdef dict types = plan._types, kernels = plan._kernels, attrs
    cdef tuple t, k, ids
    cdef Py_ssize_t op_idx = -1
    cdef object block_idx = plan._block_idx, base = plan._seed_base
    place, registry = plan.place, plan.registry
    slot_var, subplan = SlotVarOf(plan), plan.subplan
    device = plan._device
    for op in ops:
        op_idx += 1
        if op_filter is not None and not op_filter(op):
            continue
        opdef = op.opdef
        if opdef is None:
            plan._undefined(op, op_idx)   # its error
        t = types.get(opdef)
        if t is None:
            t = types[opdef] = _op_type(opdef)
        if not t[3]:
            continue   # no_kernel: the executor binds feeds and fetches to slots directly
        # The op's slots: the pairs it keeps (Operator._io: [(slot, (names...)), ...] of
        # inputs, outputs; a repeated slot: its last binding), read by slot_names (no dicts).
        io = op._io_cache   # (Operator._io, without its call when decoded already)
        if io is None:
            io = op._io()
        ins, outs = <list>io[0], <list>io[1]
        in_ids, out_ids, dtype = walk.resolve(op, t, ins, outs, float_dtypes)
        op_type = t[2]
        try:
            k = kernels.get((op_type, dtype))
            if k is None:
                kernel = registry.kernel(op_type, place.device, dtype)
                k = kernels[op_type, dtype] = (kernel, kernel.fn, kernel.kind)
            attrs = _attrs_of(op)
            if device is None:
                device = plan._device = place.module()
            info = info_type(op_type, attrs, place, device, (ins, outs), slot_var,
                             _seed(attrs, base, block_idx, op_idx), subplan,
                             (op, block_idx, op_idx))
            fn = k[1](attrs, info)
        except OpError as e:
            e.locate(**plan._where(op, op_idx))
            raise
        except HeadraceError:
            raise
        except Exception as e:
            raise OpError(f"preparing its kernel failed: {type(e).__name__}: {e}",
                          **plan._where(op, op_idx)) from e
        _exposed(op, <list>io, attrs, written, seen, exposed)
        if k[2] == "array":
            if type(fn) not in plain_types:
                refuse(k[0], fn)
            # LoD flows from the first input that has one to the outputs that declare LoD.
            lod_share = plan._lod_share(in_ids, out_ids) if walk.lod_slots else ()
            instrs.append(Instr(fn, in_ids, out_ids, op, lod_share, None,
                                _output_checks(out_ids, <tuple>t[4], facts, np_dtypes)))
        else:
            instr = plan._framed(op, opdef, k[2], fn, in_ids, out_ids, dict(ins), dict(outs))
            instr.checks = _output_checks(out_ids, <tuple>t[4], facts, np_dtypes)
            instrs.append(instr)


def exposed_inputs(plan, fed):
    """``(must_init, unfed)`` of a root plan: of the names its ops read before any of them
    writes it (``plan.exposed_reads``) and not in ``fed`` (a set), ``(slot, op)`` of each
    persistable variable (it must be in the scope when a run starts), and ``(op, Variable)``
    of the first other dense one (nothing feeds or computes it: the executor's FeedError),
    or None. A tensor array nothing wrote is empty: passed. A name the plan has no slot for
    (read in a sub-block only) is looked up in the op's block, as
    ``Executor._check_inputs`` did it name by name in Python (~0.4 ms of the first step of
    a 1603-op program)."""
    cdef dict by_name = plan._by_name
    cdef list facts = plan.slots.facts, must_init = []
    cdef tuple f
    slot = plan.slots.slot
    for op, name in <list>plan.exposed_reads:
        if name in fed:
            continue   # available from the start
        i = by_name.get(name)
        if i is None:
            var = op.block.find_var(name)
            if var is None:
                continue   # undeclared: the plan already refused it, naming the op
            i = slot(var)
        f = <tuple>facts[<Py_ssize_t>i]
        if (<tuple>f[1])[4]:   # SlotVar.persistable
            must_init.append((i, op))
        elif f[0] != "lod_tensor_array":
            return must_init, (op, plan.slots.vars[<Py_ssize_t>i])
    return must_init, None


cdef int _mark_written(plan, bytearray written) except -1:
    """Set ``written[i]`` for every slot an instruction of ``plan`` or of its sub-plans
    stores to (output ids > 0; -1 is an @EMPTY@ output, () an unbound slot)."""
    cdef Py_ssize_t n = len(written)
    for ins in <list>plan.instrs:
        for i in <tuple>ins.out_ids:
            if type(i) is tuple:
                for j in <tuple>i:
                    if j > 0:
                        written[<Py_ssize_t>j] = 1
            elif i > 0:
                written[<Py_ssize_t>i] = 1
    for sub in plan._subplans.values():
        _mark_written(sub, written)
    return 0


def scope_bindings(plan, fed):
    """``(loads, stores)`` of a root plan: ``(slot, name)`` of each persistable variable the
    run reads from the scope (every persistable slot but the fed ones), and ``(slot, name,
    has LoD)`` of each persistable one an instruction writes, which goes back to the scope,
    both in slot order. ``fed``: the fed slots."""
    cdef SlotMap slots = plan.slots
    cdef list facts = slots.facts, variables = slots.vars
    cdef list loads = [], stores = []
    cdef Py_ssize_t i, n = len(variables)
    cdef tuple sv
    cdef bytearray written = bytearray(n)
    _mark_written(plan, written)
    for i in range(1, n):
        sv = <tuple>(<tuple>facts[i])[1]   # SlotVar: (name, dtype, shape, lod_level, persistable)
        if sv[4]:
            if i not in fed:
                loads.append((i, sv[0]))
            if written[i]:
                stores.append((i, sv[0], sv[3] > 0))
    return loads, stores
