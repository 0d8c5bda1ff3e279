"""The executor's NaN/Inf check (Paddle's ``FLAGS_check_nan_inf``): every op's floating outputs
are checked as soon as its kernel returns, and the first NaN or Inf stops the run with a
:class:`~headrace.errors.NanInfError` naming the op, its block and index, the user's line that
created it (for a gradient op, also the forward op it differentiates) and the variable.

It is on for ``Executor(place, check_nan_inf=True)``, or when the environment sets
``HEADRACE_CHECK_NAN_INF=1`` (or Paddle's ``FLAGS_check_nan_inf=1``) as the Executor is made.
Such an executor prepares :class:`NanInfPlan`s instead of plain Plans: plain plans, and the
Cython loop they run, are untouched, so the check costs nothing when it is off. When on, ops
run one at a time (the per-op path the first run of a feed signature already takes) and each
output is scanned once; sub-blocks (``while``, ``conditional_block``) are checked op by op too,
since a NanInfPlan's sub-plans are NanInfPlans. Values a run starts with (fed, or read from the
scope) are checked first, so a NaN fed in is not blamed on the first op that reads it.

Outputs declared intermediate (a kernel's saved workspace) are not checked: their contents are
the kernel's business, and may be uninitialized memory. On CUDA, a checked output is copied to
the host: a debugging mode, not a fast one.
"""
import os

import numpy as np

from ..errors import NanInfError
from ..ops.grad import GRAD_SUFFIX
from .plan import Plan, SlotMap
from .tensor import Tensor

__all__ = ["ENV_VARS", "NanInfPlan", "enabled", "prepare"]

ENV_VARS = ("HEADRACE_CHECK_NAN_INF", "FLAGS_check_nan_inf")
_SHOWN = 3   # non-finite positions named in a message


def enabled(option):
    """The executor's setting: ``option`` when given (True/False), else the environment."""
    if option is not None:
        return bool(option)
    for name in ENV_VARS:
        value = os.environ.get(name, "").strip().lower()
        if value and value not in ("0", "false", "no", "off"):
            return True
    return False


class NanInfPlan(Plan):
    """A Plan that checks every op's outputs for NaN and Inf as it runs."""

    root = False   # set on the plan the executor runs (its sub-plans are not roots)

    def run(self, values, lods, check=False):
        if self.root:
            self._check_start(values)
        # A truthy check sends Plan.run through its one-op-at-a-time loop, calling _after.
        super().run(values, lods, check or "finite")

    def _after(self, instr, values, check):
        if check is True:
            self._check_outputs(instr, values)
        outputs = instr.op.opdef.outputs
        for spec, ids in zip(outputs, instr.out_ids):
            if spec.intermediate:
                continue
            for i in ids if isinstance(ids, tuple) else (ids,):
                if i > 0:
                    bad = _non_finite(values[i])
                    if bad is not None:
                        raise _error(instr.op, f"output '{spec.name}'", self.slots.vars[i],
                                     bad, "it computed")

    def _check_start(self, values):
        """The values the run starts with (feeds, persistables from the scope), each named
        with the first op that reads it."""
        readers = self.__dict__.get("_readers")
        if readers is None:   # slot -> (first op reading it, its input slot), made once
            readers = self._readers = {}
            for instr in self.instrs:
                for spec, ids in zip(instr.op.opdef.inputs, instr.in_ids):
                    for i in ids if isinstance(ids, tuple) else (ids,):
                        readers.setdefault(i, (instr.op, spec.name))
        for i, (op, slot) in readers.items():
            if i <= 0 or values[i] is None:
                continue
            bad = _non_finite(values[i])
            if bad is not None:
                raise _error(op, f"input '{slot}'", self.slots.vars[i], bad,
                             "the run started with (fed, or read from the scope)")


def _host(v):
    if isinstance(v, np.ndarray):
        return v
    if hasattr(v, "copy_to_host"):
        return v.copy_to_host()
    return None


def _non_finite(value):
    """None when every float in ``value`` (an array, a device array, a tensor array) is
    finite; else ``(array, index in a tensor array or None)`` of the first offender."""
    if isinstance(value, list):   # a tensor array: its tensors in order
        for k, t in enumerate(value):
            if isinstance(t, Tensor):
                bad = _non_finite(t.data)
                if bad is not None:
                    return bad[0], k
        return None
    if getattr(getattr(value, "dtype", None), "kind", None) not in ("f", "c"):
        return None
    host = _host(value)
    if host is None or np.isfinite(host).all():
        return None
    return host, None


def _error(op, what, var, bad, when):
    host, element = bad
    nan = np.isnan(host)
    inf = np.isinf(host)
    flat = np.flatnonzero(nan | inf)
    where = ", ".join(f"{host.flat[k]} at {[int(d) for d in np.unravel_index(k, host.shape)]}"
                      for k in flat[:_SHOWN]) + (", ..." if flat.size > _SHOWN else "")
    in_array = f" (element {element} of the tensor array)" if element is not None else ""
    counts = " and ".join(f"{n} {what_}" for n, what_ in ((int(nan.sum()), "NaN"),
                                                        (int(inf.sum()), "Inf")) if n)
    reason = (f"{what} (variable '{var.name}'){in_array} holds {counts} among the "
              f"{host.size} values {when} (check_nan_inf)")
    forward = _forward_op(op)
    if forward is not None:
        forward = (f"op '{forward.type}' (block {forward.block.idx}, op #{forward.idx})"
                   + (f", created at: {forward.source}" if forward.source else ""))
    return NanInfError(reason, op_type=op.type, block_idx=op.block.idx, op_idx=op.idx,
                       source=op.source, variable=var.name, gradient_of=forward,
                       expected=f"finite {host.dtype.name} values",
                       found=f"{where} (shape {list(host.shape)})")


def _forward_op(op):
    """The forward op a ``<type>_grad`` op differentiates: of that type, in the op's block or
    an ancestor, writing a variable whose gradient the grad op reads. None when not found (a
    gradient op may come from a maker that emits other types)."""
    if not op.type.endswith("_grad"):
        return None
    want = op.type[:-len("_grad")]
    grads = {n.split(GRAD_SUFFIX)[0] for n in op.input_arg_names if GRAD_SUFFIX in n}
    block = op.block
    while block is not None:
        for candidate in block.ops:
            if candidate.type == want and grads & set(candidate.output_arg_names):
                return candidate
        block = block.parent
    return None


def prepare(block, place, registry, op_filter=None):
    """A root NanInfPlan for ``block`` on ``place`` (``plan.prepare``'s checked twin)."""
    plan = NanInfPlan(block, place, SlotMap(), registry, op_filter)
    plan.root = True
    return plan
