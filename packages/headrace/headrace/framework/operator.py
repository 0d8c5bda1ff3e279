"""Operator: a Python view over an OpDesc.

A new op is checked and committed by ``Block.append_op`` (framework/_build.pyx: the op type
must be registered, slots and attributes must match the definition, defaults are filled in,
shape inference runs; a rejected op leaves the program exactly as it was).
"""

from ..errors import OpError, OpValidationError
from ..ops import attrs as attr_codec
from ..ops.definition import COMMON_ATTRS
from ..proto import framework_pb2 as pb
from .printable import printable
from .variable import Declared, declaring_block

_BLOCK_ATTR_TYPES = (pb.BLOCK, pb.BLOCKS)

__all__ = ["Operator"]


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
        self._attrs_kept = None  # the decoded attributes: see _attrs_but

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
        kept = self._attrs_kept
        if kept is not None:
            return name in kept
        return self._attr_msg(name) is not None

    @property
    def attr_names(self):
        return [a.name for a in self.desc.attrs]

    def attr(self, name):
        """The value of attribute ``name``; BLOCK attributes give Block objects."""
        kept = self._attrs_kept
        if kept is not None and name in kept:
            value = kept[name]
            return value[:] if type(value) is list else value
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

    # The attributes are kept decoded beside the desc, as the slots are: written by the
    # commit (_build.pyx) from the entries it merged into the desc (attr_codec.encoded_entry
    # gives what decoding them reads back), else decoded on the first full read (parsed and
    # cloned programs); set_attr updates them, remove_attr drops them (the only changes made
    # to an op's attributes). Ops with a block reference are not kept (the value is a Block
    # object).
    # Plan preparation reads every op's attributes, gradient makers every forward op's:
    # decoding a desc's attributes costs ~5 us an op.
    def _attrs_but(self, skip):
        """``attrs`` without the names in ``skip``, which are not decoded (gradient makers
        leave the bookkeeping ones out, op_callstack among them). A new dict, of new lists:
        the caller may change it."""
        kept = self._attrs_kept
        program = self.block.program
        if kept is not None:
            self._sub_cache = (program._revision, ())   # kept: no block reference
            return {k: v[:] if type(v) is list else v for k, v in kept.items()
                    if k not in skip}
        # One pass over the desc (attr(n) per name searched it once per name); a name the
        # desc repeats keeps its first value, as attr(n) reads it.
        # attr_codec.decode, inlined through its table (a plan reads every op's attributes).
        out = {}
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
        if not skip and not owned:
            self._attrs_kept = {k: v[:] if type(v) is list else v for k, v in out.items()}
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
        # The kept attributes follow (a block reference is not kept: dropped).
        kept = self._attrs_kept
        if kind in ("block", "blocks"):
            self._attrs_kept = kept = None
        if kept is not None and name not in kept:   # a new one: one entry merged in
            raw, kept[name] = attr_codec.encoded_entry(name, kind, value)
            self.desc.MergeFromString(raw)
        else:
            msg = self._attr_msg(name) or self.desc.attrs.add()
            attr_codec.encode(msg, name, kind, value)
            if kept is not None:
                kept[name] = attr_codec.decode(msg)[1]
        self.block._changed()

    def remove_attr(self, name):
        for i, a in enumerate(self.desc.attrs):
            if a.name == name:
                del self.desc.attrs[i]
                self._attrs_kept = None
                self.block._changed()
                return

    @property
    def source(self):
        """The user's source line that created the op (from op_callstack), or None."""
        kept = self._attrs_kept
        if kept is not None:
            stack = kept.get("op_callstack")
            return stack[0] if type(stack) is list and stack else None
        msg = self._attr_msg("op_callstack")
        return msg.strings[0] if msg is not None and len(msg.strings) else None

    def sub_blocks(self):
        """The blocks this op owns through BLOCK/BLOCKS attributes."""
        if self._attrs_kept is not None:   # kept: no block reference among them
            return []
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
