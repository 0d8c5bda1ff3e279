# cython: language_level=3
"""Building a new op, compiled: ``Block.append_op``'s checks and shape inference
(:func:`prepare_op`) and its commit into the block (:func:`commit`).

Every op of a program goes through both (a 200-layer fc net and its SGD step: 2004 ops, the
startup program's included), and in Python they were half the time of building it and
calling ``minimize``. This is the same code, compiled (glue: Python objects only); what it
calls back (shape inference rules, the registry, the VarDesc writers) is unchanged.

``prepare_op`` validates an op against its definition: the op type must be registered, slots
and attributes must match the definition, defaults are filled in, and shape inference runs on
the inputs' VarDescs. Nothing touches the program until all of that succeeded, so a rejected
op leaves the program exactly as it was.
"""
import math

from .. import dtypes
from .. import dtypes as dt
from ..errors import OpError, OpValidationError, VariableError
from ..ops import attrs as attr_codec
from ..ops.definition import COMMON_ATTRS, REQUIRED
from ..ops.grad import EMPTY
from ..ops.infer import InferContext, VarMeta, _new_meta
from ..callsite import user_callsite
from . import seeds
from .operator import Operator, _bad_block_ref, _owning_cycle
from .variable import (_TAILS, _TENSOR_KINDS, _VARINT1, KINDS, Variable, _tensor_desc,
                       declared_meta, normalize_lod_level, normalize_shape)


cdef class PreparedOp:
    """A validated op, ready to be committed into a block."""
    cdef readonly object opdef, source
    cdef readonly dict inputs, outputs, attrs, results
    cdef readonly list new_vars


class _BuildContext(InferContext):
    """Inference over the VarDescs of a block (and its ancestors) at build time."""

    def __init__(self, block, op_type, inputs, outputs, attrs, metas):
        self.op_type = op_type
        self.results = {}
        self._block, self._ins, self._outs, self._attrs = block, inputs, outputs, attrs
        self._metas = metas  # slot -> [VarMeta] (the inputs', read by prepare_op): rules ask
        #                      for a slot several times

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


cdef class _Where:
    """Where the op being prepared is, for its errors (block.idx reads the desc: made only
    when one is raised)."""
    cdef object block, op_type, op_idx, source

    def __init__(self, block, op_type, op_idx, source):
        self.block, self.op_type, self.op_idx, self.source = block, op_type, op_idx, source

    cdef dict where(self):
        return dict(op_type=self.op_type, block_idx=self.block.idx, op_idx=self.op_idx,
                    source=self.source)

    def fail(self, message, **kw):
        raise OpValidationError(message, **self.where(), **kw)


cdef list _names(value, str kind, slot, _Where w):
    """Variable / name / list of them -> list of names (``kind`` and ``slot`` name the slot
    in an error)."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    cdef list out = []
    for v in items:
        if type(v) is str and v:   # the common cases first, without the class hierarchy
            out.append(v)
        elif isinstance(v, Variable):
            out.append(v.name)
        elif isinstance(v, str) and v:
            out.append(v)
        else:
            w.fail(f"{kind} slot '{slot}' must be a Variable or a variable name",
                   expected="Variable, str, or a list of them",
                   found=f"{type(v).__name__} {v!r}")
    return out


_ENTRIES = attr_codec._ENTRIES   # cleared, never replaced
_UNCACHED = frozenset(attr_codec._UNCACHED)
_TENSOR = frozenset(_TENSOR_KINDS)
# Read once here (module attributes the commit of every op would look up).
_encoded_entry, _UNKEPT, _guess_type = attr_codec.encoded_entry, attr_codec.UNKEPT, \
    attr_codec.guess_type
_stamp_attrs = seeds.stamp_attrs
_new_operator, _new_variable = Operator.__new__, Variable.__new__
_CANONICAL = frozenset(dtypes.DTYPES)   # dtype names that dtypes.canonical keeps as they are
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
cdef dict _VALID = {}   # (AttrDef, type, value[, sign]) -> (canonical value,): see _validated


cdef bint _normalized(shape):
    """Whether normalize_shape would give ``shape`` itself: a tuple of ints in [-1, 2**63)
    (set_output's results: the usual), checked without the call."""
    if type(shape) is not tuple:
        return False
    for d in <tuple>shape:
        if type(d) is not int or d < -1 or d > _INT64_MAX:
            return False
    return True


cdef object _validated(spec, value):
    """``spec.validate(value)``, remembered for plain ints, strings, bools and floats (a
    network's ops repeat a few values: axis=1, x_num_col_dims=1, an initializer's bounds...).
    A float's key carries its sign: 0.0 and -0.0 are equal keys with two canonical values."""
    t = type(value)
    if t is float:
        key = (spec, t, value, math.copysign(1.0, value))
    elif t is int or t is str or t is bool:
        key = (spec, t, value)
    else:
        return spec.validate(value)
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
    cdef _Where w = _Where(block, op_type, op_idx, source)
    if not isinstance(op_type, str) or not op_type:
        w.fail("an op type must be a non-empty str", expected="an op type such as 'relu'",
               found=f"{type(op_type).__name__} {op_type!r}")
    try:
        opdef = block.program.registry.get(op_type)
    except OpError as e:
        e.locate(**w.where())
        raise  # the same error, now located (its own cause kept)
    cdef dict ins = {}, outs = {}, in_metas = {}, valid, dest
    cdef list new_vars = [], names, metas
    find = block._find_var_recursive
    cdef dict bvars = block.vars
    for kind, given, slots in (("input", inputs or {}, opdef.inputs),
                               ("output", outputs or {}, opdef.outputs)):
        if not isinstance(given, dict):
            w.fail(f"{kind}s must be a dict of slot name -> variables",
                   found=type(given).__name__)
        valid = opdef._in if kind == "input" else opdef._out  # {slot name: slot}, in order
        for slot in given:
            if slot not in valid:
                w.fail(f"unknown {kind} slot '{slot}'", options=list(valid))
        dest = ins if kind == "input" else outs
        for s in slots:
            names = _names(given.get(s.name), kind, s.name, w)
            if not names:
                if s.intermediate and not s.optional:
                    # Intermediate outputs exist for the backward pass: create one if not given.
                    names = [block.program._unique_var_name(f"{op_type}.{s.name.lower()}")]
                    new_vars.append(names[0])
                elif not s.optional:
                    w.fail(f"missing {kind} '{s.name}'",
                           expected=f"a variable for slot '{s.name}'", found="nothing")
                else:
                    continue
            if len(names) > 1 and not s.duplicable:
                w.fail(f"{kind} slot '{s.name}' takes one variable",
                       expected="1 variable", found=f"{len(names)}: {names}")
            if kind == "input":
                metas = []  # read once here: shape inference reads the same
                accepted = s.dtypes
                for n in names:
                    var = bvars.get(n)   # _find_var_recursive's first step, inlined
                    if var is None:
                        var = find(n)
                    if var is None:
                        w.fail(f"input variable '{n}' (slot '{s.name}') is not defined in "
                               f"block {block.idx} or its ancestors")
                    meta = var._meta   # meta(), kept by the variable: inlined
                    if meta is None:
                        meta = var.meta()
                    if accepted is not None and meta.dtype is not None and \
                            meta.dtype not in accepted:
                        w.fail(f"input '{s.name}' ({n}) has an unsupported dtype",
                               expected=" or ".join(accepted), found=meta.dtype)
                    metas.append(meta)
                in_metas[s.name] = metas
            else:
                for n in names:
                    if n not in new_vars and n != EMPTY and n not in bvars and \
                            find(n) is None:
                        new_vars.append(n)
            dest[s.name] = names
    # Attributes: declared ones are checked and defaulted; bookkeeping ones pass.
    cdef dict values = {}
    declared = opdef.attrs
    for name, value in (attrs or {}).items():
        spec = declared.get(name) or COMMON_ATTRS.get(name)   # opdef.attr(name)
        if spec is None:
            if strict_attrs:
                w.fail(f"unknown attribute '{name}'",
                       options=sorted(opdef.attrs) or ["(none)"])
            kind = attr_codec.guess_type(value)
            if kind is None:
                w.fail(f"attribute '{name}' has a value of unsupported type "
                       f"{type(value).__name__}")
            values[name] = attr_codec.coerce(kind, value)
            continue
        ok = _validated(spec, value)
        if isinstance(ok, str):
            w.fail(f"attribute '{name}' {ok}", expected=f"{spec.type}" +
                   (f" in {list(spec.choices)}" if spec.choices else ""), found=repr(value))
        bad = (_bad_block_ref(block.program, spec.type, ok[0]) or
               _owning_cycle(block.program, ok[0], spec.type, block.idx)) \
            if spec.type in ("block", "blocks") else None
        if bad:
            w.fail(f"attribute '{name}' {bad}",
                   expected=f"a block index in [0, {block.program.num_blocks - 1}]",
                   found=repr(value))
        values[name] = ok[0]
    for spec in opdef.attrs.values():
        if spec.name not in values:
            default = spec.default
            if default is REQUIRED:
                w.fail(f"missing required attribute '{spec.name}'", expected=spec.type)
            # A copy: a list default is shared by every op of the type (a rule may mutate it).
            values[spec.name] = list(default) if type(default) is list else default
    cdef dict results = {}
    if opdef.infer is not None:
        # Inputs that do not exist yet cannot be read; outputs that will be created are fine.
        ctx = _BuildContext(block, op_type, ins, outs, values, in_metas)
        try:
            opdef.infer(ctx)
        except OpError as e:
            e.locate(**w.where())
            raise
        except Exception as e:  # a bug in a plugin's rule: still say which op and where
            raise OpError(f"shape inference raised {type(e).__name__}: {e}", **w.where()) from e
        # @EMPTY@ outputs (unwanted gradients) are bound but never declared (the rule's own
        # dicts are kept when none is bound: the context is dropped after this).
        results = ctx.results
        if any(EMPTY in bound for bound in outs.values()):
            results = {sl: {i: m for i, m in ms.items() if m.name != EMPTY}
                       for sl, ms in results.items()}
        # A rule's results are applied to VarDescs only after the op is accepted: check them
        # now, so that a bad one (a plugin bug) cannot fail half-way through the commit.
        for slot, by_index in results.items():
            for i, meta in by_index.items():
                if meta.kind == "lod_tensor" and type(meta.lod_level) is int and \
                        0 <= meta.lod_level <= _INT32_MAX and type(meta.dtype) is str and \
                        meta.dtype in _CANONICAL and \
                        _normalized(meta.shape):
                    continue   # normalized already (set_output's tuple of ints): the usual
                try:
                    if meta.kind not in KINDS:
                        raise VariableError(f"unknown kind {meta.kind!r}")
                    dtype = None if meta.dtype is None else dtypes.canonical(meta.dtype)
                    shape = normalize_shape(meta.shape, meta.name)
                    lod_level = normalize_lod_level(meta.lod_level, meta.name) or 0
                except VariableError as e:
                    raise OpError(f"shape inference gave output '{slot}' ({meta.name}) an "
                                  f"invalid result: {e}", **w.where()) from e
                by_index[i] = meta._replace(shape=shape, dtype=dtype, lod_level=lod_level)
    cdef PreparedOp p = PreparedOp.__new__(PreparedOp)
    p.opdef, p.inputs, p.outputs, p.attrs = opdef, ins, outs, values
    p.new_vars, p.results, p.source = new_vars, results, source
    return p


def commit(block, Py_ssize_t index, PreparedOp p, op_type):
    """Put the prepared op ``p`` into ``block`` at ``index``: its new variables declared, its
    outputs' VarDescs given the inferred results, its OpDesc written; the op."""
    # Check before changing anything: an existing variable cannot change its kind.
    cdef dict final = {}  # name -> its last result (a name bound twice takes the last)
    cdef dict found = {}  # name -> its existing Variable (None: new)
    cdef dict results = p.results
    cdef dict bvars = block.vars
    find = block._find_var_recursive
    for slot, metas in results.items():
        for meta in metas.values():
            name = meta.name
            final[name] = meta
            var = bvars.get(name)   # _find_var_recursive's first step, inlined
            if var is None:
                var = find(name)
            found[name] = var
            if var is not None and (var._meta or var.meta()).kind != meta.kind:
                raise OpError(f"output '{slot}' ({name}) is a {var.kind} variable",
                              op_type=op_type, block_idx=block.idx, op_idx=index,
                              source=p.source, expected=meta.kind, found=var.kind)
    # prepare_op normalized every result already: a new variable's VarDesc is made with it,
    # an existing one's is written directly (create_var and the setters would check each
    # value again).
    cdef list new_vars = p.new_vars
    for name in new_vars:
        meta = final.get(name)
        if meta is None:
            block.create_var(name=name, type="lod_tensor")
            continue
        _new_var(block, bvars, name, meta.kind, meta.shape, meta.dtype, meta.lod_level)
    for metas in results.values():
        for meta in metas.values():
            var = found[meta.name]
            if var is not None:   # (new: declared with its result above)
                _write_meta(var, meta)
    # The program's seed goes into the op itself, so that it travels with the desc.
    cdef dict values = p.attrs
    opdef = p.opdef
    seeded = _stamp_attrs(block, opdef, values) if opdef.seed_attr else False
    cdef list ops = block.ops
    cdef Py_ssize_t n_ops = len(ops)
    cdef list ins = [(slot, tuple(names)) for slot, names in p.inputs.items()]
    cdef list outs = [(slot, tuple(names)) for slot, names in p.outputs.items()]
    # The attributes in their order; what the desc decodes them to is kept by the op
    # (Operator.attrs), unless a block reference is among them.
    cdef list entries = []
    cdef dict kept = {}
    cdef bint keep = True
    encoded = _encoded_entry
    unkept = _UNKEPT
    declared = opdef.attrs
    for name, value in values.items():
        spec = declared.get(name) or COMMON_ATTRS.get(name)   # opdef.attr(name)
        kind = spec.type if spec is not None else _guess_type(value)
        # encoded_entry's cache, looked up here (its key: see there); the rest goes to it
        t = type(value)
        pair = None
        if t is int or t is str or t is bool:
            if kind not in _UNCACHED:
                pair = _ENTRIES.get((name, kind, value))
        elif t is list:
            if kind not in _UNCACHED:
                pair = _ENTRIES.get((name, kind, tuple(value)))
        elif t is float and (kind == "float" or kind == "float64"):
            pair = _ENTRIES.get((name, kind, value, math.copysign(1.0, value)))
        if pair is None:
            pair = encoded(name, kind, value)
        raw, decoded = pair
        entries.append(raw)
        kept[name] = decoded
        if decoded is unkept:
            keep = False
    if "op_role" not in values:
        role = block.program._op_role
        pair = _ENTRIES.get(("op_role", "int", role)) if type(role) is int else None
        raw, kept["op_role"] = pair or encoded("op_role", "int", role)
        entries.append(raw)
    source = p.source
    if source and "op_callstack" not in values:
        pair = _ENTRIES.get(("op_callstack", "strings", (source,)))
        raw, kept["op_callstack"] = pair or encoded("op_callstack", "strings", [source])
        entries.append(raw)
    # An appended op's desc is written whole: its bytes merged into the BlockDesc (one call
    # into protobuf where writing it field by field took a dozen); an inserted one (or a name
    # UTF-8 cannot encode) field by field, with the attributes merged at once.
    data = _op_desc_bytes(op_type, ins, outs, entries) if index == n_ops else None
    if data is not None:
        bdesc = block.desc
        bdesc.MergeFromString(data)
        desc = bdesc.ops[-1]
    else:
        desc = block.desc.ops.add() if index == n_ops else block._insert_desc(index)
        desc.type = op_type
        for container, io in ((desc.inputs, ins), (desc.outputs, outs)):
            for slot, names in io:
                v = container.add()
                v.parameter = slot
                v.arguments.extend(names)
        desc.MergeFromString(b"".join(entries))
    # Operator._wrap(block, desc, opdef) and op._set_io(ins, outs), without their frames:
    # Operator.__init__'s fields, set here (test_block checks that they are the same).
    op = _new_operator(Operator)
    op.block, op.desc, op.opdef = block, desc, opdef
    op._io_cache = [ins, outs, None, None, None, None]
    op._sub_cache = None
    op._attrs_kept = kept if keep else None
    if seeded:
        op._seed_from_program = True
    ops.insert(index, op)
    # The op becomes the writer (var.op) of its outputs that no later op of the block writes.
    cdef set later = _written_later(ops, index + 1, outs) if index < n_ops else set()
    for _, names in outs:
        for name in names:
            if name not in later and name != EMPTY:
                var = bvars.get(name)
                (find(name) if var is None else var).op = op
    block.program._revision += 1   # block._changed()
    return op


cdef set _written_later(list ops, Py_ssize_t start, list outs):
    """Which of the names bound in ``outs`` an op of ``ops[start:]`` writes. Only those names
    are looked for, and the walk stops once all are found: prepending an op (a startup
    program's initializers) made the set of every later op's outputs, O(block size) lists
    and set insertions an op."""
    cdef set pending = set()
    cdef set found = set()
    cdef Py_ssize_t i, n = len(ops)
    for _, names in outs:
        for name in names:
            if name != EMPTY:
                pending.add(name)
    if not pending:
        return found
    for i in range(start, n):
        o = ops[i]
        cache = o._io_cache
        if cache is None:   # not decoded yet (a parsed program's op)
            for a in o.output_arg_names:
                if a in pending:
                    pending.discard(a)
                    found.add(a)
        else:
            for _, args in cache[1]:
                for a in args:
                    if a in pending:
                        pending.discard(a)
                        found.add(a)
        if not pending:
            break
    return found


cdef inline void _varint(bytearray buf, Py_ssize_t n):
    """Append protobuf's base-128 varint of ``n`` >= 0 (attr_codec.varint, in place)."""
    while n > 0x7F:
        buf.append((n & 0x7F) | 0x80)
        n >>= 7
    buf.append(n)


cdef inline Py_ssize_t _varint_size(Py_ssize_t n):
    cdef Py_ssize_t size = 1
    while n > 0x7F:
        n >>= 7
        size += 1
    return size


cdef object _op_desc_bytes(str op_type, list ins, list outs, list entries):
    """The wire bytes of a BlockDesc ``ops`` entry (field 4) holding the OpDesc with this
    type, these slots ``[(slot, (names...)), ...]`` and attribute entries
    (attr_codec.encoded_entry's, each tagged already), written into one buffer; None when a
    name is not a str or no valid UTF-8 (the desc's own setters then say what they say)."""
    cdef bytearray buf = bytearray()
    cdef bytes enc, param
    cdef list encs
    cdef Py_ssize_t size
    cdef int tag
    try:
        for tag, io in ((0x0a, ins), (0x12, outs)):   # OpDesc.inputs (1), outputs (2): Vars
            for slot, names in <list>io:
                if type(slot) is not str:
                    return None
                param = (<str>slot).encode("utf-8")
                encs = []
                for name in names:
                    if type(name) is not str:
                        return None
                    encs.append((<str>name).encode("utf-8"))
                size = 1 + _varint_size(len(param)) + len(param)
                for enc in encs:
                    size += 1 + _varint_size(len(enc)) + len(enc)
                buf.append(tag)
                _varint(buf, size)
                buf.append(0x0a)                       # Var.parameter (1)
                _varint(buf, len(param))
                buf += param
                for enc in encs:                       # Var.arguments (2)
                    buf.append(0x12)
                    _varint(buf, len(enc))
                    buf += enc
        enc = op_type.encode("utf-8")
    except UnicodeEncodeError:
        return None
    buf.append(0x1a)                                   # OpDesc.type (3)
    _varint(buf, len(enc))
    buf += enc
    for enc in entries:                                # OpDesc.attrs (4)
        buf += enc
    cdef bytearray out = bytearray(b"\x22")            # BlockDesc.ops (4)
    _varint(out, len(buf))
    out += buf
    return out


cdef object _new_var(block, dict bvars, name, kind, shape, dtype, lod_level):
    """A new variable of ``block`` declared with normalized values: ``create_var``'s result
    without its checks. Its VarDesc takes init_desc's cached bytes when they are made
    already (the usual: a network's variables have a few shapes), else init_desc makes them."""
    tail = _TAILS.get((kind, shape, dtype, lod_level, False, False, False)) \
        if type(shape) is tuple else None
    encoded = None
    if tail is not None and type(name) is str:
        try:
            encoded = (<str>name).encode("utf-8")
        except UnicodeEncodeError:
            encoded = None
    if encoded is None:
        desc = block._add_var_desc(name, kind, shape, dtype, lod_level, None, None, None)
    else:
        n = len(encoded)
        desc = block.desc.vars.add()
        desc.MergeFromString(b"\x0a" + (_VARINT1[n] if n < 128 else attr_codec.varint(n)) +
                             encoded + tail)
    # Variable._wrap(block, desc), likewise: Variable.__init__'s fields set here (the name
    # is the one just written into the desc; test_block checks the fields are the same).
    var = bvars[name] = _new_variable(Variable)
    var.block, var.desc, var.op, var._name = block, desc, None, name
    var._meta = _new_meta(VarMeta, (name, shape or (), dtype or "float32", lod_level or 0,
                                    "lod_tensor")) \
        if kind == "lod_tensor" else None   # declared_meta, inlined
    block.program._revision += 1   # block._changed()
    return var


def declare_like(block, name, meta):
    """Declare ``name`` in ``block`` as the (normalized) VarMeta ``meta`` of another variable
    gives it: a gradient like its forward variable (autodiff declares ~one a forward op)."""
    if meta.kind != "lod_tensor" or type(name) is not str or not name or name in block.vars:
        return block.create_var(name=name, shape=meta.shape, dtype=meta.dtype,
                                lod_level=meta.lod_level, type=meta.kind)
    return _new_var(block, block.vars, name, "lod_tensor", normalize_shape(meta.shape, name),
                    meta.dtype, meta.lod_level)


cdef _write_meta(var, meta):
    """Shape inference's result ``meta`` (normalized by prepare_op) into ``var``'s VarDesc, as
    the shape/dtype/lod_level setters would write it; kinds without a tensor take nothing."""
    have = var._meta   # meta(), read once (kept by the variable): inlined
    if have is None:
        have = var.meta()
    kind = have.kind
    if kind not in _TENSOR:
        return
    if kind == "lod_tensor" and have.dtype is not None:
        # Declared so already (autodiff declares gradients as their rules then infer them):
        # nothing to write. (A lod_tensor's meta has a dtype exactly when its desc has the
        # lod_tensor field: see Variable.meta.)
        if have.shape == meta.shape and have.lod_level == meta.lod_level and \
                (meta.dtype is None or have.dtype == meta.dtype):
            return
    var._meta = None
    t = _tensor_desc(var.desc, True)
    t.ClearField("dims")
    t.dims.extend(meta.shape)
    if meta.dtype is not None:
        t.data_type = dt.to_proto(meta.dtype)
    if kind != "selected_rows":
        getattr(var.desc.type, "lod_tensor" if kind == "lod_tensor" else "tensor_array") \
            .lod_level = meta.lod_level
    if kind == "lod_tensor":   # what meta() would read back now (the next op reads it)
        var._meta = _new_meta(VarMeta, (have.name, meta.shape, dt.from_proto(t.data_type),
                                        meta.lod_level, "lod_tensor"))
    var.block._changed()
