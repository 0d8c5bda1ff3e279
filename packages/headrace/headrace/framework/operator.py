"""Operator: a Python view over an OpDesc, plus the build-time checks of a new op.

``Block.append_op`` goes through :func:`prepare_op`: the op type must be registered, slots and
attributes must match the definition, defaults are filled in, and shape inference runs on the
inputs' VarDescs. Nothing touches the program until all of that succeeded, so a rejected op
leaves the program exactly as it was.
"""
import math

from .. import dtypes
from ..errors import OpError, OpValidationError, VariableError
from ..ops import attrs as attr_codec
from ..ops.definition import COMMON_ATTRS, REQUIRED
from ..ops.grad import EMPTY
from ..ops.infer import InferContext
from ..proto import framework_pb2 as pb
from .printable import printable
from ..callsite import user_callsite
from .variable import (KINDS, Declared, Variable, declaring_block, normalize_lod_level,
                       normalize_shape)

_BLOCK_ATTR_TYPES = (pb.BLOCK, pb.BLOCKS)

__all__ = ["Operator", "prepare_op", "PreparedOp"]


def _bad_block_ref(program, kind, value):
    """Why a (coerced) BLOCK/BLOCKS attribute value does not name blocks of ``program``, or
    None. An out-of-range index would make the saved program unloadable."""
    n = program.num_blocks
    for b in (value if kind == "blocks" else [value]):
        idx = getattr(b, "idx", b)
        if idx >= n or getattr(b, "program", program) is not program:
            return f"points at block {idx}, which is not a block of this program ({n} blocks)"
    return None


def _owning_cycle(program, value, kind, block_idx):
    """Why giving an op of block ``block_idx`` the BLOCK/BLOCKS ``value`` would make blocks
    own each other in a cycle (the program would recurse into itself when run, pruned or
    saved; parsing refuses such files too), or None."""
    seen, todo = set(), [getattr(b, "idx", b) for b in
                         (value if kind == "blocks" else [value])]
    while todo:
        b = todo.pop()
        if b == block_idx:
            return (f"makes block {block_idx} own itself (through the blocks this attribute "
                    f"names): running the program would recurse without end")
        if b in seen or not 0 <= b < program.num_blocks:
            continue
        seen.add(b)
        for op in program.block(b).ops:
            for a in op.desc.attrs:
                if a.type == pb.BLOCK:
                    todo.append(a.block_idx)
                elif a.type == pb.BLOCKS:
                    todo.extend(a.blocks_idx)
    return None


def _find_slot(container, slot):
    for v in container:
        if v.parameter == slot:
            return v
    return None


class Operator(metaclass=Declared):
    """An operator in a block. ``opdef`` is its definition (None for op types loaded from a
    file that no installed plugin defines; such a program can be inspected and saved).

    ``Operator(block, type, inputs=None, outputs=None, attrs=None)`` appends a new op to
    ``block`` (default: the current block of the default main program), validated and its
    shapes inferred, as ``block.append_op``; it is then in ``block.ops`` and the BlockDesc.
    """

    def __init__(self, block, desc, opdef=None):
        self.block = block
        self.desc = desc
        self.opdef = opdef
        self._io_cache = None  # the decoded slots: see _io
        self._sub_cache = None  # (program revision, owned block indices): see sub_blocks

    @classmethod
    def _declare(cls, block=None, type=None, inputs=None, outputs=None, attrs=None):
        return declaring_block(block).append_op(type, inputs, outputs, attrs)

    @property
    def type(self):
        return self.desc.type

    @property
    def idx(self):
        """Position in the block (a linear search: for messages, not hot loops)."""
        return self.block.ops.index(self)

    # -- slots -----------------------------------------------------------------------------
    # The slots are kept decoded beside the desc: written by Block._commit from what it put
    # into the desc, else decoded on first use (parsed and cloned programs), and dropped by
    # rename_input/rename_output, the only changes made to an op's slots (building, autodiff,
    # analysis and plan preparation read them many times; decoding a desc costs ~10 us).
    def _io(self):
        cache = self._io_cache
        if cache is None:
            d = self.desc
            cache = self._set_io([(v.parameter, tuple(v.arguments)) for v in d.inputs],
                                 [(v.parameter, tuple(v.arguments)) for v in d.outputs])
        return cache

    def _set_io(self, ins, outs):
        """Record the slots ``[(slot, (names...)), ...]`` the desc holds, in its order; the
        maps by slot are made when first asked for (_by_slot)."""
        cache = self._io_cache = [ins, outs, None, None, None, None]
        return cache

    def _by_slot(self, k):
        """{slot: (names...)}: k = 2/3 inputs/outputs with a repeated slot's first binding
        (``input(slot)``), 4/5 with its last (``inputs``)."""
        cache = self._io()
        m = cache[k]
        if m is None:
            pairs = cache[k % 2]
            m = cache[k] = dict(reversed(pairs)) if k < 4 else dict(pairs)
        return m

    def _slots(self):
        """``({slot: (names...)}, {slot: (names...)})`` of inputs and outputs, as ``inputs``
        and ``outputs`` give them but shared and read-only (plan preparation)."""
        return self._by_slot(4), self._by_slot(5)

    def input(self, slot):
        """Variable names bound to input ``slot`` (empty if unbound)."""
        return list(self._by_slot(2).get(slot, ()))

    def output(self, slot):
        """Variable names bound to output ``slot`` (empty if unbound)."""
        return list(self._by_slot(3).get(slot, ()))

    @property
    def input_names(self):
        return [s for s, _ in self._io()[0]]

    @property
    def output_names(self):
        return [s for s, _ in self._io()[1]]

    @property
    def inputs(self):
        return {s: list(args) for s, args in self._io()[0]}

    @property
    def outputs(self):
        return {s: list(args) for s, args in self._io()[1]}

    @property
    def input_arg_names(self):
        return [a for _, args in self._io()[0] for a in args]

    @property
    def output_arg_names(self):
        cache = self._io_cache
        if cache is None:   # not decoded yet (a program being parsed asks every op once)
            return [a for v in self.desc.outputs for a in v.arguments]
        return [a for _, args in cache[1] for a in args]

    def rename_input(self, old, new):
        for v in self.desc.inputs:
            for i, a in enumerate(v.arguments):
                if a == old:
                    v.arguments[i] = new
        self._io_cache = None
        self.block._changed()

    def rename_output(self, old, new):
        for v in self.desc.outputs:
            for i, a in enumerate(v.arguments):
                if a == old:
                    v.arguments[i] = new
        self._io_cache = None
        self.block._changed()

    # -- attributes ------------------------------------------------------------------------
    def _attr_msg(self, name):
        for a in self.desc.attrs:
            if a.name == name:
                return a
        return None

    def has_attr(self, name):
        return self._attr_msg(name) is not None

    @property
    def attr_names(self):
        return [a.name for a in self.desc.attrs]

    def attr(self, name):
        """The value of attribute ``name``; BLOCK attributes give Block objects."""
        msg = self._attr_msg(name)
        if msg is None:
            raise OpError(f"has no attribute '{name}'", op_type=self.type,
                          block_idx=self.block.idx, options=self.attr_names,
                          source=self.source)
        kind, value = attr_codec.decode(msg)
        if kind == "block":
            return self.block.program.block(value)
        if kind == "blocks":
            return [self.block.program.block(i) for i in value]
        return value

    def attr_type(self, name):
        msg = self._attr_msg(name)
        return attr_codec.type_name(msg.type) if msg is not None else None

    @property
    def attrs(self):
        """All attributes as a dict (decoded)."""
        return self._attrs_but(())

    def _attrs_but(self, skip):
        """``attrs`` without the names in ``skip``, which are not decoded (gradient makers
        leave the bookkeeping ones out, op_callstack among them)."""
        # One pass over the desc (attr(n) per name searched it once per name); a name the
        # desc repeats keeps its first value, as attr(n) reads it.
        # attr_codec.decode, inlined through its table (a plan reads every op's attributes).
        out = {}
        program = self.block.program
        table = attr_codec.DECODE
        owned = []   # what sub_blocks reads from the same messages: noted on the way
        for msg in self.desc.attrs:
            name = msg.name
            how = table.get(msg.type)
            kind = how[0] if how is not None else None
            if kind == "block":
                owned.append(msg.block_idx)
            elif kind == "blocks":
                owned.extend(msg.blocks_idx)
            if name in out or name in skip:
                continue
            if how is None:   # a type headrace does not decode (kept as is in the desc)
                out[name] = None
                continue
            value = getattr(msg, how[1])
            if how[2]:
                value = list(value)
            if kind == "block":
                value = program.block(value)
            elif kind == "blocks":
                value = [program.block(i) for i in value]
            out[name] = value
        self._sub_cache = (program._revision, owned)
        return out

    def set_attr(self, name, value):
        """Set an attribute, checked against the op's definition when it has one."""
        spec = self.opdef.attr(name) if self.opdef is not None else None
        if spec is None and self.opdef is not None and name not in COMMON_ATTRS:
            raise OpValidationError(f"unknown attribute '{name}'", op_type=self.type,
                                    block_idx=self.block.idx, source=self.source,
                                    options=sorted(self.opdef.attrs))
        if spec is not None:
            ok = spec.validate(value)
            if not isinstance(ok, str) and spec.type in ("block", "blocks"):
                ok = _bad_block_ref(self.block.program, spec.type, ok[0]) or \
                    _owning_cycle(self.block.program, ok[0], spec.type, self.block.idx) or ok
            if isinstance(ok, str):
                raise OpValidationError(f"attribute '{name}' {ok}", op_type=self.type,
                                        block_idx=self.block.idx, source=self.source)
            value, kind = ok[0], spec.type
        else:
            kind = self.attr_type(name) or attr_codec.guess_type(value)
            try:
                if kind is None:
                    raise TypeError
                value = attr_codec.coerce(kind, value)
            except (TypeError, ValueError):
                raise OpValidationError(
                    f"attribute '{name}' cannot take {type(value).__name__} {value!r}",
                    op_type=self.type, block_idx=self.block.idx, source=self.source,
                    expected=kind or "a value of a supported attribute type",
                    found=repr(value)) from None
        msg = self._attr_msg(name) or self.desc.attrs.add()
        attr_codec.encode(msg, name, kind, value)
        self.block._changed()

    def remove_attr(self, name):
        for i, a in enumerate(self.desc.attrs):
            if a.name == name:
                del self.desc.attrs[i]
                self.block._changed()
                return

    @property
    def source(self):
        """The user's source line that created the op (from op_callstack), or None."""
        msg = self._attr_msg("op_callstack")
        return msg.strings[0] if msg is not None and len(msg.strings) else None

    def sub_blocks(self):
        """The blocks this op owns through BLOCK/BLOCKS attributes."""
        program = self.block.program
        cache = self._sub_cache
        if cache is None or cache[0] != program._revision:  # analysis asks every op, often
            idx = []
            for a in self.desc.attrs:
                if a.type not in _BLOCK_ATTR_TYPES:  # skip decoding the rest
                    continue
                kind, value = attr_codec.decode(a)
                if kind == "block":
                    idx.append(value)
                elif kind == "blocks":
                    idx.extend(value)
            cache = self._sub_cache = (program._revision, idx)
        return [program.block(i) for i in cache[1]]

    # -- text ------------------------------------------------------------------------------
    def to_string(self, show_bookkeeping=False):
        """``Out=[y] = mul(X=[x], Y=[w]) {x_num_col_dims=1, ...}``"""
        # Names come from the file as they are: escaped, so that none can forge a line
        # (attribute values are shown as repr, escaped already).
        def slots(vs):
            return ", ".join(f"{printable(v.parameter)}=[{', '.join(map(printable, v.arguments))}]"
                             for v in vs)
        shown = []
        for a in self.desc.attrs:
            if a.name in COMMON_ATTRS and not show_bookkeeping:
                continue
            kind, value = attr_codec.decode(a)
            name = printable(a.name)
            if kind is None:
                shown.append(f"{name}=<attr type {a.type}>")
            elif kind in ("block", "blocks"):
                shown.append(f"{name}=block{value}")
            else:
                shown.append(f"{name}={value!r}")
        text = f"{slots(self.desc.outputs)} = {printable(self.type)}({slots(self.desc.inputs)})"
        return text + (f" {{{', '.join(shown)}}}" if shown else "")

    def __repr__(self):
        return f"<Operator {self.to_string()}>"


# ----------------------------------------------------------------------------------------
# Building a new op
# ----------------------------------------------------------------------------------------

class PreparedOp:
    """A validated op, ready to be committed into a block."""
    __slots__ = ("opdef", "inputs", "outputs", "attrs", "new_vars", "results", "source")

    def __init__(self, opdef, inputs, outputs, attrs, new_vars, results, source):
        self.opdef, self.inputs, self.outputs, self.attrs = opdef, inputs, outputs, attrs
        self.new_vars, self.results, self.source = new_vars, results, source


class _BuildContext(InferContext):
    """Inference over the VarDescs of a block (and its ancestors) at build time."""

    def __init__(self, block, op_type, inputs, outputs, attrs):
        super().__init__(op_type)
        self._block, self._ins, self._outs, self._attrs = block, inputs, outputs, attrs
        self._metas = {}  # slot -> [VarMeta]: rules ask for a slot several times

    def _inputs(self, slot):
        metas = self._metas.get(slot)
        if metas is None:
            find = self._block._find_var_recursive
            metas = self._metas[slot] = [find(n).meta() for n in self._ins.get(slot, ())]
        return metas

    def _output_names(self, slot):
        return self._outs.get(slot, [])

    def attr(self, name):
        return self._attrs[name]


def _names(value, kind, slot, fail):
    """Variable / name / list of them -> list of names (``kind`` and ``slot`` name the slot
    in an error)."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in items:
        if type(v) is str and v:   # the common cases first, without the class hierarchy
            out.append(v)
        elif isinstance(v, Variable):
            out.append(v.name)
        elif isinstance(v, str) and v:
            out.append(v)
        else:
            fail(f"{kind} slot '{slot}' must be a Variable or a variable name",
                 expected="Variable, str, or a list of them", found=f"{type(v).__name__} {v!r}")
    return out


_CANONICAL = frozenset(dtypes.DTYPES)   # dtype names that dtypes.canonical keeps as they are
_INT32_MAX = 2**31 - 1
_VALID = {}   # (AttrDef, type, value[, sign]) -> (canonical value,): see _validated
_KEYED = (int, str, bool, float)


def _validated(spec, value):
    """``spec.validate(value)``, remembered for plain ints, strings, bools and floats (a
    network's ops repeat a few values: axis=1, x_num_col_dims=1, an initializer's bounds...).
    A float's key carries its sign: 0.0 and -0.0 are equal keys with two canonical values."""
    t = type(value)
    if t not in _KEYED:
        return spec.validate(value)
    key = (spec, t, value, math.copysign(1.0, value)) if t is float else (spec, t, value)
    ok = _VALID.get(key)
    if ok is None:
        ok = spec.validate(value)
        if isinstance(ok, str):
            return ok
        if len(_VALID) > 4096:   # bounded: strings can be endless
            _VALID.clear()
        _VALID[key] = ok
    return ok


def prepare_op(block, op_type, inputs, outputs, attrs, op_idx, strict_attrs=True):
    """Validate a new op against its definition and run its shape inference.

    Returns a :class:`PreparedOp`; raises an :class:`OpError` subclass naming the op, block,
    index and the user's source line. Nothing in the program is changed here.
    """
    source = user_callsite()

    def where():   # made for an error only (block.idx reads the desc)
        return dict(op_type=op_type, block_idx=block.idx, op_idx=op_idx, source=source)

    def fail(message, **kw):
        raise OpValidationError(message, **where(), **kw)

    if not isinstance(op_type, str) or not op_type:
        fail("an op type must be a non-empty str", expected="an op type such as 'relu'",
             found=f"{type(op_type).__name__} {op_type!r}")
    try:
        opdef = block.program.registry.get(op_type)
    except OpError as e:
        e.locate(**where())
        raise  # the same error, now located (its own cause kept)
    ins, outs, new_vars, in_metas = {}, {}, [], {}
    for kind, given, slots in (("input", inputs or {}, opdef.inputs),
                               ("output", outputs or {}, opdef.outputs)):
        if not isinstance(given, dict):
            fail(f"{kind}s must be a dict of slot name -> variables",
                 found=type(given).__name__)
        valid = opdef._in if kind == "input" else opdef._out  # {slot name: slot}, in order
        for slot in given:
            if slot not in valid:
                fail(f"unknown {kind} slot '{slot}'", options=list(valid))
        dest = ins if kind == "input" else outs
        for s in slots:
            names = _names(given.get(s.name), kind, s.name, fail)
            if not names:
                if s.intermediate and not s.optional:
                    # Intermediate outputs exist for the backward pass: create one if not given.
                    names = [block.program._unique_var_name(f"{op_type}.{s.name.lower()}")]
                    new_vars.append(names[0])
                elif not s.optional:
                    fail(f"missing {kind} '{s.name}'", expected=f"a variable for slot '{s.name}'",
                         found="nothing")
                else:
                    continue
            if len(names) > 1 and not s.duplicable:
                fail(f"{kind} slot '{s.name}' takes one variable",
                     expected="1 variable", found=f"{len(names)}: {names}")
            if kind == "input":
                metas = []  # read once here: shape inference reads the same
                for n in names:
                    var = block._find_var_recursive(n)
                    if var is None:
                        fail(f"input variable '{n}' (slot '{s.name}') is not defined in block "
                             f"{block.idx} or its ancestors")
                    meta = var.meta()
                    if s.dtypes is not None and meta.dtype is not None and \
                            meta.dtype not in s.dtypes:
                        fail(f"input '{s.name}' ({n}) has an unsupported dtype",
                             expected=" or ".join(s.dtypes), found=meta.dtype)
                    metas.append(meta)
                in_metas[s.name] = metas
            else:
                for n in names:
                    if n not in new_vars and n != EMPTY and block._find_var_recursive(n) is None:
                        new_vars.append(n)
            dest[s.name] = names
    # Attributes: declared ones are checked and defaulted; bookkeeping ones pass.
    values = {}
    for name, value in (attrs or {}).items():
        spec = opdef.attr(name)
        if spec is None:
            if strict_attrs:
                fail(f"unknown attribute '{name}'", options=sorted(opdef.attrs) or ["(none)"])
            kind = attr_codec.guess_type(value)
            if kind is None:
                fail(f"attribute '{name}' has a value of unsupported type {type(value).__name__}")
            values[name] = attr_codec.coerce(kind, value)
            continue
        ok = _validated(spec, value)
        if isinstance(ok, str):
            fail(f"attribute '{name}' {ok}", expected=f"{spec.type}" +
                 (f" in {list(spec.choices)}" if spec.choices else ""), found=repr(value))
        bad = (_bad_block_ref(block.program, spec.type, ok[0]) or
               _owning_cycle(block.program, ok[0], spec.type, block.idx)) \
            if spec.type in ("block", "blocks") else None
        if bad:
            fail(f"attribute '{name}' {bad}",
                 expected=f"a block index in [0, {block.program.num_blocks - 1}]",
                 found=repr(value))
        values[name] = ok[0]
    for spec in opdef.attrs.values():
        if spec.name not in values:
            default = spec.default
            if default is REQUIRED:
                fail(f"missing required attribute '{spec.name}'", expected=spec.type)
            # A copy: a list default is shared by every op of the type (a rule may mutate it).
            values[spec.name] = list(default) if type(default) is list else default
    results = {}
    if opdef.infer is not None:
        # Inputs that do not exist yet cannot be read; outputs that will be created are fine.
        ctx = _BuildContext(block, op_type, ins, outs, values)
        ctx._metas.update(in_metas)
        try:
            opdef.infer(ctx)
        except OpError as e:
            e.locate(**where())
            raise
        except Exception as e:  # a bug in a plugin's rule: still say which op and where
            raise OpError(f"shape inference raised {type(e).__name__}: {e}", **where()) from e
        # @EMPTY@ outputs (unwanted gradients) are bound but never declared (the rule's own
        # dicts are kept when none is bound: the context is dropped after this).
        results = ctx.results
        if any(EMPTY in names for names in outs.values()):
            results = {slot: {i: m for i, m in metas.items() if m.name != EMPTY}
                       for slot, metas in results.items()}
        # A rule's results are applied to VarDescs only after the op is accepted: check them
        # now, so that a bad one (a plugin bug) cannot fail half-way through the commit.
        for slot, metas in results.items():
            for i, meta in metas.items():
                if meta.kind == "lod_tensor" and type(meta.lod_level) is int and \
                        0 <= meta.lod_level <= _INT32_MAX and type(meta.dtype) is str and \
                        meta.dtype in _CANONICAL and \
                        normalize_shape(meta.shape, meta.name) is meta.shape:
                    continue   # normalized already (set_output's tuple of ints): the usual
                try:
                    if meta.kind not in KINDS:
                        raise VariableError(f"unknown kind {meta.kind!r}")
                    dtype = None if meta.dtype is None else dtypes.canonical(meta.dtype)
                    shape = normalize_shape(meta.shape, meta.name)
                    lod_level = normalize_lod_level(meta.lod_level, meta.name) or 0
                except VariableError as e:
                    raise OpError(f"shape inference gave output '{slot}' ({meta.name}) an "
                                  f"invalid result: {e}", **where()) from e
                metas[i] = meta._replace(shape=shape, dtype=dtype, lod_level=lod_level)
    return PreparedOp(opdef, ins, outs, values, new_vars, results, source)
