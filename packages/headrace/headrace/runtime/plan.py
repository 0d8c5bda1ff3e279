"""Prepared plans: a block compiled once into a flat list of kernel calls over numbered slots.

Preparing resolves every variable to a slot index, picks every op's kernel for the place,
reads the facts its maker may need (:class:`KernelInfo`) and binds its attributes, so a run is
a tight loop: gather the input values, call the kernel, store the outputs (see ``_loop``).

How a kernel is called is its declared kind (``Kernel.kind``): an array kernel takes and
returns arrays in slot order; a LoD kernel takes and returns Tensors; a frame kernel takes a
:class:`Frame` and reads and writes by slot name. Sub-blocks (while, conditional_block) get
plans of their own over the same slots; their kernels receive them through
``KernelInfo.subplan``.
"""
from time import perf_counter_ns

import numpy as np

from ..dtypes import DTYPES, FLOAT_DTYPES
from ..errors import HeadraceError, OpError, PluginError
from ..framework.analysis import block_writes
from ..ops.grad import EMPTY
from ..ops.infer import DictInferContext, VarMeta
from . import _loop, _prepare
from ._loop import Instr
from ._prepare import SlotMap
from .frame import FrameLayout, LoDKernel
from ._plan_info import _PlanInfo
from .kernel_info import KernelInfo, source_line as _source

__all__ = ["KernelInfo", "Plan", "SlotMap", "prepare"]

NONE_SLOT = 0  # slot 0 always holds None: unbound optional inputs point at it


class Plan:
    """The compiled form of one block. ``instrs`` run in order over a values list."""

    def __init__(self, block, place, slots, registry, op_filter=None):
        self.block = block
        self.place = place
        self.slots = slots
        self.registry = registry
        self._subplans = {}
        self.instrs = []
        self.lod_slots = set()  # slots whose variables carry LoD
        # (op, name) of each name the plan's ops read before any of them writes it, as
        # analysis.exposed_reads gives them (the executor checks them against feeds and scope)
        self.exposed_reads = []
        self._by_name = {}      # variable name -> slot, as this plan's block resolves it
        self._kernels = {}      # (op type, dtype) -> (Kernel, its maker, its kind)
        self._types = {}        # OpDef -> what _prepare reads once per op type
        self._device = None     # place.module(), read when the first kernel is prepared
        self._block_idx = block.idx   # every op compiled here is one of block's
        self._seed_base = block.program.random_seed   # (the plan is keyed by it)
        self._local_ids = None
        # The per-op loop is compiled (_prepare.compile_ops): it calls back the methods below
        # for what is rare (undeclared names, @EMPTY@ inputs, LoD, frame kernels, errors).
        _prepare.compile_ops(self, block.ops, op_filter, _PlanInfo, FLOAT_DTYPES,
                             _PLAIN_TYPES, _refuse_undeclared_kind, _NP_DTYPES)
        self.written_names = frozenset()
        self.outer_write_ids = ()

    @property
    def local_ids(self):
        """The slots of the block's own variables (a sub-plan's step scope: Frame.snapshot).
        A sub-plan reads them when made; a root plan, which no frame snapshots, never needs
        them (a large program's thousands of variables have their slots from its ops)."""
        ids = self._local_ids
        if ids is None:
            slot = self.slots.slot
            ids = self._local_ids = tuple([slot(v) for v in self.block.vars.values()])
        return ids

    def _sub_facts(self):
        """Facts a sub-block's kernels ask for (not computed for root plans, which may be
        large): the names its ops write, and the slots of the outer variables among them,
        whose values before each step are kept for the backward pass."""
        block = self.block
        self.written_names = frozenset(block_writes(block))
        self.outer_write_ids = tuple(
            self.slots.slot(v) for v in (block._find_var_recursive(n)
                                         for n in self.written_names if n not in block.vars)
            if v is not None and v.kind != "step_scopes")

    def slot_named(self, name, local=False):
        """The slot index of variable ``name`` as this plan's block sees it (its own or an
        ancestor's; ``local``: only its own), None when there is no such variable."""
        var = self.block.vars.get(name) if local else self.block._find_var_recursive(name)
        return None if var is None else self.slots.slot(var)

    def subplan(self, block):
        p = self._subplans.get(block.idx)
        if p is None:
            # type(self): a checking plan's sub-blocks are checked too (runtime.nan_inf).
            p = self._subplans[block.idx] = type(self)(block, self.place, self.slots,
                                                       self.registry)
            p._sub_facts()
            p.local_ids   # noqa: B018  (its slots exist before the run plan counts them)
        return p

    def _input_slot(self, op, slot, name):
        """An input's slot index. ``@EMPTY@`` (autodiff's "no gradient wanted") names no value:
        in an optional or duplicable slot it reads None (a grad op's list of output gradients
        may have holes); a required single slot bound to it is refused here, since the loop
        indexes values without bounds checks (-1 would read past them)."""
        if name != EMPTY:
            return self._slot_of(op, name, "input")
        if slot.optional or slot.duplicable:
            return NONE_SLOT
        raise OpError(f"required input slot '{slot.name}' is bound to '{EMPTY}', the marker of "
                      f"a gradient nobody wants, which holds no value", op_type=op.type,
                      block_idx=op.block.idx, op_idx=op.idx, source=op.source)

    def _slot_of(self, op, name, role):
        if name == EMPTY:
            return -1  # a gradient nobody needs: computed, never stored
        i = self._by_name.get(name)
        if i is None:
            var = op.block._find_var_recursive(name)
            if var is None:
                raise OpError(f"{role} variable '{name}' is not declared in block "
                              f"{op.block.idx} or its ancestors", op_type=op.type,
                              block_idx=op.block.idx, op_idx=op.idx, source=op.source)
            i = self._by_name[name] = self.slots.slot(var)
            if self.slots.facts[i][1].lod_level > 0:   # once per name: facts do not change
                self.lod_slots.add(i)
        return i

    def _slot_var(self, name):
        """The SlotVar of ``name`` as this plan's block sees it (None for ``@EMPTY@``; an
        undeclared name is block.var_recursive's VariableError, as kernel_info's own)."""
        if name == EMPTY:
            return None
        i = self._by_name.get(name)
        if i is None:
            i = self._by_name[name] = self.slots.slot(self.block.var_recursive(name))
        return self.slots.facts[i][1]

    def _undefined(self, op, op_idx):
        """The error of an op whose type no installed plugin defines (``op.opdef`` None)."""
        raise OpError("no installed plugin defines this op type, so it cannot run",
                      op_type=op.type, block_idx=op.block.idx, op_idx=op_idx, source=op.source)

    def _lod_share(self, in_ids, out_ids):
        """An array kernel's ``(source, destination)`` slots of LoD: from the first input that
        has LoD to each output that declares it (the plan has seen LoD somewhere already)."""
        src = next((i for i in _flat(in_ids) if i in self.lod_slots), None)
        if src is None:
            return ()
        facts = self.slots.facts
        lod_share = tuple((src, d) for d in _flat(out_ids)
                          if d > 0 and facts[d][1].lod_level > 0)
        self.lod_slots.update(i for _, i in lod_share)
        return lod_share

    def _framed(self, op, opdef, kind, fn, in_ids, out_ids, ins, outs):
        """The instruction of a frame or LoD kernel: every slot of the definition, () when
        unbound; an @EMPTY@ optional input reads None."""
        layout = FrameLayout(
            op.type,
            {s.name: tuple(self._input_slot(op, s, n) for n in ins.get(s.name, ()))
             for s in opdef.inputs},
            {s.name: tuple(self._slot_of(op, n, "output") for n in outs.get(s.name, ()))
             for s in opdef.outputs})
        if kind == "lod":
            # The kernel computes its outputs' LoD itself.
            fn = LoDKernel(fn, tuple((s.name, s.duplicable) for s in opdef.inputs),
                           tuple((s.name, s.duplicable) for s in opdef.outputs))
        facts = self.slots.facts
        self.lod_slots.update(i for i in _flat(out_ids) if i > 0 and facts[i][1].lod_level > 0)
        return Instr(fn, in_ids, out_ids, op, (), layout)

    def _where(self, op, op_idx):
        """Where ``op`` is, for an error raised while preparing it."""
        try:
            source = _source(op, op.attrs)
        except Exception:
            source = op.source   # undecodable attributes: their own error says why
        return dict(op_type=op.type, block_idx=self._block_idx, op_idx=op_idx, source=source)

    def run(self, values, lods, check=False):
        """Run every instruction over ``values`` (list by slot) and ``lods`` (slot -> LoD).
        ``check``: verify each kernel's outputs against their declarations as it goes (the
        executor asks for it once per feed signature: a kernel that returns the wrong dtype or
        rank is caught at its op, not somewhere downstream)."""
        if check and type(self)._after is not Plan._after:
            self.run_each(values, lods, check)   # a subclass's checks (runtime.nan_inf)
            return
        try:
            if check:
                # _check_outputs' rule, its usual case in the loop (the first step of a large
                # program spent ~2 us an op on it in Python), over what preparing each op
                # found to check (Instr.checks).
                _loop.run_checked(self.instrs, values, lods, self._checks_of,
                                  self._check_values)
            else:
                _loop.run(self.instrs, values, lods)
        except OpError:
            raise
        except Exception as e:
            raise self._explain(e, values) from e

    def run_each(self, values, lods, check=False, timer=None):
        """Run the instructions one at a time: after each, ``_after`` checks it when ``check``
        is set, and ``timer(instr, start_ns)`` is called right after its kernel returns (the
        profiler's hook: headrace.profiler)."""
        failed = None
        try:
            for k, instr in enumerate(self.instrs):
                failed = k   # the index _explain needs (the loop runs one at a time)
                if timer is None:
                    _loop.run([instr], values, lods)
                else:
                    start = perf_counter_ns()
                    _loop.run([instr], values, lods)
                    timer(instr, start)
                if check:
                    self._after(instr, values, check)
        except OpError:
            raise
        except Exception as e:
            raise self._explain(e, values, failed) from e

    def _after(self, instr, values, check):
        """What the checked path does after each instruction (a subclass adds its checks)."""
        self._check_outputs(instr, values)

    def _checks_of(self, instr):
        """``Instr.checks`` of an instruction not made by ``_prepare.compile_ops``."""
        mask = tuple(not spec.intermediate for spec in instr.op.opdef.outputs)
        return _prepare.output_checks(instr.out_ids, mask, self.slots.facts, _NP_DTYPES)

    def _check_outputs(self, instr, values):
        """Each dense output's dtype must be its variable's, and its rank the declared one (a
        declared [1] and a 0-D value stand for each other: Fluid programs declare [1] where
        Paddle 3 computes 0-D; a declaration without dims is not checked for rank: Paddle's
        files leave dims unset for values its shape rules skip, rnn's DropoutState in
        inference among them). Intermediate outputs (a kernel's saved workspace, such as
        rnn's Reserve, which Paddle declares uint8 and fills with floats) are not checked."""
        slots = instr.op.opdef.outputs
        for spec, ids in zip(slots, instr.out_ids):
            if not spec.intermediate:   # a workspace's layout is the kernel's own business
                self._check_values(instr, ids if isinstance(ids, tuple) else (ids,), values)

    def _check_values(self, instr, ids, values):
        for i in ids:
            if i <= 0:
                continue
            (kind, facts), v = self.slots.facts[i], values[i]
            if kind != "lod_tensor" or not hasattr(v, "dtype") or not hasattr(v, "shape"):
                continue
            want, got = facts.dtype, _dtype_name(v.dtype)
            declared = facts.shape
            rank_ok = not declared or len(declared) == len(v.shape) or (
                len(declared) <= 1 and len(v.shape) <= 1 and
                all(d in (1, -1) for d in declared) and all(d == 1 for d in v.shape))
            if got == want and rank_ok:
                continue
            op, var = instr.op, self.slots.vars[i]
            raise OpError(
                f"its kernel returned a value for output variable '{var.name}' that does not "
                f"match the variable's declaration (a kernel bug: the value is not passed on)",
                op_type=op.type, block_idx=op.block.idx, op_idx=op.idx, source=op.source,
                expected=f"{want} of rank {len(declared)} (declared {list(declared)})",
                found=f"{got} of shape {list(v.shape)}")

    def _explain(self, exc, values, failed=None):
        """Turn a kernel's exception into an OpError at the failing op; the op's shape rule is
        re-run on the real shapes first, since its message is usually the most precise."""
        instr = self.instrs[_loop.failed_index() if failed is None else failed]
        op = instr.op
        where = dict(op_type=op.type, block_idx=op.block.idx, op_idx=op.idx, source=op.source)
        if isinstance(exc, HeadraceError) and not isinstance(exc, OpError):
            return OpError(str(exc), **where)
        opdef = op.opdef
        if opdef.infer is not None:
            metas = {}
            for s, ids in zip(opdef.inputs, instr.in_ids):
                ids = ids if isinstance(ids, tuple) else (ids,)
                metas[s.name] = [self._meta(i, values[i]) for i in ids if i > 0]
            ctx = DictInferContext(op.type, metas, op.outputs, op.attrs, runtime=True)
            try:
                opdef.infer(ctx)
            except OpError as e:
                return e.locate(**where)
            except Exception:
                pass
        return OpError(f"kernel failed: {type(exc).__name__}: {exc}", **where)

    def _meta(self, i, value):
        var = self.slots.vars[i]
        shape = tuple(getattr(value, "shape", ()))
        dtype = np.dtype(value.dtype).name if hasattr(value, "dtype") else var.dtype
        return VarMeta(var.name, shape, dtype, var.lod_level, var.kind)


# What the first run's checks compare an output's dtype with: dtype name -> np.dtype (an
# ndarray's dtype is that very object in the usual case).
_NP_DTYPES = {}
for _name in DTYPES:
    try:
        _NP_DTYPES[_name] = np.dtype(_name)
    except TypeError:
        pass   # a dtype NumPy lacks: such outputs take _check_values' path


_PLAIN_TYPES = set()   # types of kernels found without the old kind attributes


def _refuse_undeclared_kind(kernel, fn):
    """A kernel registered as an array kernel that still carries the attributes the plan once
    guessed the kind from (``lod_kernel``/``frame_kernel``) was written for another calling
    convention: calling it with arrays would silently compute wrong values, so refuse it."""
    t = type(fn)
    if t in _PLAIN_TYPES:
        return   # (a missing attribute costs getattr a raised and caught AttributeError)
    for attr, kind in (("frame_kernel", "frame"), ("lod_kernel", "lod")):
        if getattr(fn, attr, False):
            raise PluginError(
                f"plugin {kernel.plugin!r}: kernel {kernel.op_type}/{kernel.device} sets "
                f"{attr} = True but is registered as an array kernel; the kind is declared at "
                f"registration: add_kernel(..., kind={kind!r}) or a KERNELS entry ending in "
                f"{kind!r} (the attribute is no longer read)")
    if not hasattr(fn, "__dict__") and not any(
            hasattr(t, a) for a in ("frame_kernel", "lod_kernel", "__getattr__")):
        _PLAIN_TYPES.add(t)   # no attributes of its own, none from its type: all its kernels


_DTYPE_NAMES = {}


def _dtype_name(dtype):
    """``np.dtype(dtype).name``, memoized: NumPy computes the name anew on every call."""
    try:
        name = _DTYPE_NAMES.get(dtype)
    except TypeError:  # an unhashable dtype-like object
        return np.dtype(dtype).name
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


def _flat(ids):
    for i in ids:
        if isinstance(i, tuple):
            yield from i
        else:
            yield i


def prepare(block, place, registry, op_filter=None):
    """A root Plan for ``block`` on ``place``."""
    return Plan(block, place, SlotMap(), registry, op_filter)
