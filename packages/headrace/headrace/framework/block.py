"""Block: variables and a sequence of operators, nested through its parent.

Variables are looked up in the block, then its ancestors (a sub-block's ops read the enclosing
block's variables). Parameters always live in the global block, whichever block creates them.
The Python lists ``vars`` and ``ops`` and the BlockDesc's repeated fields are changed together,
always, by the methods here.
"""
from .. import dtypes as dt
from ..errors import VariableError
from ..proto import framework_pb2 as pb
from . import defaults
from .builder import dtype_enum
from ._build import commit, declare_like, prepare_op
from .variable import (KINDS, Parameter, Variable, declared_meta,
                       init_desc, normalize_lod_level, normalize_shape)

__all__ = ["Block"]


class Block:
    """One block of a program. ``idx`` is its index in the program, ``parent_idx`` its parent's
    (-1 for the global block)."""

    def __init__(self, program, desc):
        self.program = program
        self.desc = desc
        self.vars = {}   # name -> Variable, in declaration order
        self.ops = []    # Operator, in execution order

    @property
    def idx(self):
        return self.desc.idx

    @property
    def parent_idx(self):
        return self.desc.parent_idx

    @property
    def forward_block_idx(self):
        return self.desc.forward_block_idx

    @property
    def parent(self):
        """The parent Block, or None for the global block."""
        return self.program.block(self.parent_idx) if self.parent_idx >= 0 else None

    def _changed(self):
        self.program._revision += 1

    # -- variables -------------------------------------------------------------------------
    def has_var(self, name):
        return name in self.vars

    def var(self, name):
        """The variable ``name`` of this block (not its ancestors)."""
        try:
            return self.vars[name]
        except KeyError:
            raise VariableError(f"block {self.idx} has no variable '{name}'") from None

    def _find_var_recursive(self, name):
        # Building asks it for every input and output of every op: the parent is read from
        # the desc only when the name is not here (the ``parent`` property reads it twice).
        block = self
        while True:
            v = block.vars.get(name)
            if v is not None:
                return v
            idx = block.desc.parent_idx
            if idx < 0:
                return None
            block = block.program.block(idx)

    def find_var(self, name):
        """The variable ``name`` in this block or its nearest ancestor that has it, or None."""
        return self._find_var_recursive(name)

    def var_recursive(self, name):
        """Like :meth:`find_var` but an error when no ancestor has it."""
        v = self._find_var_recursive(name)
        if v is None:
            raise VariableError(f"variable '{name}' is not defined in block {self.idx} "
                                f"or its ancestors")
        return v

    def all_parameters(self):
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def create_var(self, name=None, shape=None, dtype=None, lod_level=None, persistable=None,
                   stop_gradient=None, type="lod_tensor", need_check_feed=None):
        """Declare a variable in this block, or return the existing one of that name.

        Re-declaring a name returns the same Variable and never adds a second VarDesc; a
        re-declaration with another shape, dtype, kind or lod_level is a VariableError.
        """
        if name is None:
            name = self.program._unique_var_name("_generated_var")
        if not isinstance(name, str) or not name:
            raise VariableError(f"variable name must be a non-empty str, got {name!r}")
        shape = normalize_shape(shape, name)
        lod_level = normalize_lod_level(lod_level, name)
        if dtype is not None:
            dtype = dt.canonical(dtype)
        if type not in KINDS:
            raise VariableError(f"variable '{name}': unknown kind {type!r}; "
                                f"valid: {', '.join(KINDS)}")
        existing = self.vars.get(name)
        if existing is not None:
            self._check_redeclaration(existing, shape, dtype, lod_level, type)
            return existing
        desc = self._add_var_desc(name, type, shape, dtype, lod_level, persistable,
                                  stop_gradient, need_check_feed)
        var = Variable._wrap(self, desc)
        var._meta = declared_meta(name, type, shape, dtype, lod_level)
        self.vars[name] = var
        self._changed()
        return var

    # ``_declare_like(name, meta)``: ``create_var(name, ...)`` as the VarMeta ``meta`` of
    # another variable gives it (a gradient like its forward variable), its checks skipped
    # where ``meta`` was read from a VarDesc, checked already. The compiled function itself
    # (_build.declare_like, a method as a Python function would be: no wrapper frame).
    _declare_like = declare_like

    def create_global_var(self, name=None, shape=None, dtype=None, lod_level=None,
                          persistable=None, stop_gradient=None, type="lod_tensor",
                          need_check_feed=None):
        """``create_var`` in the program's global block, whichever block this is (seeds:
        python_api's data layer)."""
        return self.program.global_block().create_var(
            name=name, shape=shape, dtype=dtype, lod_level=lod_level, persistable=persistable,
            stop_gradient=stop_gradient, type=type, need_check_feed=need_check_feed)

    def _add_var_desc(self, *args):
        # Everything was checked before, but a failure must still leave no half-made VarDesc.
        desc = self.desc.vars.add()
        try:
            init_desc(desc, *args)
        except BaseException:
            del self.desc.vars[-1]
            raise
        return desc

    def _check_redeclaration(self, var, shape, dtype, lod_level, kind):
        found = []
        if kind != var.kind:
            found.append(f"kind {kind} (declared {var.kind})")
        if shape is not None and tuple(shape) != var.shape:
            found.append(f"shape {list(shape)} (declared {list(var.shape)})")
        if dtype is not None and dtype != var.dtype:
            found.append(f"dtype {dtype} (declared {var.dtype})")
        if lod_level is not None and lod_level != var.lod_level:
            found.append(f"lod_level {lod_level} (declared {var.lod_level})")
        if found:
            raise VariableError(f"variable '{var.name}' is re-declared in block {self.idx} "
                                f"with a conflicting " + "; ".join(found))

    def create_parameter(self, name, shape, dtype="float32", trainable=True,
                         optimize_attr=None, regularizer=None, gradient_clip=None,
                         initializer=None, lod_level=None):
        """Declare a parameter. Parameters are global: it lands in the program's global block,
        whichever block this is. Re-declaring returns the existing parameter.

        ``initializer``: a :mod:`headrace.initializer` object (any ``init(var, block)``), or the
        seeds' ``init_attr`` dict, ``{"type": "uniform_random", "min": -1.0, "max": 1.0}``: an
        op writing ``Out``, with its attributes (``shape`` and ``dtype`` are the parameter's
        unless given). As layers do, the op goes to the global block of the default startup
        program (``program_guard`` sets it), where the parameter's twin is declared: once, when
        the twin is new there (a re-declaration with an initializer makes a missing twin). A
        failing initializer leaves neither program changed.
        """
        if not isinstance(name, str) or not name:
            raise VariableError(f"a parameter name must be a non-empty str, got {name!r}")
        _check_initializer(name, initializer)
        g = self.program.global_block()
        shape = normalize_shape(shape, name)
        dtype = dt.canonical("float32" if dtype is None else dtype)
        lod_level = normalize_lod_level(lod_level, name)
        sblock = _startup_block()
        if name in g.vars:
            existing = g.vars[name]
            if not isinstance(existing, Parameter):
                raise VariableError(f"'{name}' is already a non-parameter variable of block 0")
            g._check_redeclaration(existing, shape, dtype, lod_level, "lod_tensor")
            if initializer is not None and g is not sblock:
                _declare_twin(existing, initializer, sblock)
            return existing
        if shape is None or any(d < 0 for d in shape):
            raise VariableError(f"parameter '{name}' needs a fully known shape, got {shape}")
        desc = g._add_var_desc(name, "lod_tensor", shape, dtype, lod_level, True, False, False)
        p = Parameter._wrap(g, desc, trainable, optimize_attr, regularizer, gradient_clip,
                            initializer)
        p._meta = declared_meta(name, "lod_tensor", shape, dtype, lod_level)
        g.vars[name] = p
        g._changed()
        if initializer is not None:
            try:
                if g is sblock:
                    _append_initializer(p, initializer, sblock)
                else:
                    _declare_twin(p, initializer, sblock)
            except BaseException:
                g.remove_var(name)
                raise
        return p

    def remove_var(self, name):
        """Remove variable ``name`` from this block."""
        if name not in self.vars:
            raise VariableError(f"block {self.idx} has no variable '{name}'")
        del self.vars[name]
        for i, d in enumerate(self.desc.vars):
            if d.name == name:
                del self.desc.vars[i]
                break
        self._changed()

    # -- operators -------------------------------------------------------------------------
    def append_op(self, type, inputs=None, outputs=None, attrs=None):
        """Append an operator; validated against its definition, shapes inferred."""
        index = len(self.ops)   # insert_op at the end, without its frame (every op built)
        return commit(self, index, prepare_op(self, type, inputs, outputs, attrs, index), type)

    def prepend_op(self, type, inputs=None, outputs=None, attrs=None):
        """Insert an operator at the front (parameter initializers use this)."""
        return self.insert_op(0, type, inputs, outputs, attrs)

    # The seeds' names (python_api: Block.append_operator / prepend_operator).
    append_operator = append_op
    prepend_operator = prepend_op

    def insert_op(self, index, type, inputs=None, outputs=None, attrs=None):
        """Insert an operator at ``index`` (negative counts from the end, as list.insert)."""
        n = len(self.ops)
        index = max(0, index + n) if index < 0 else min(n, index)
        # Validated and inferred, then committed: compiled (_build.pyx).
        return commit(self, index, prepare_op(self, type, inputs, outputs, attrs, index), type)

    def _insert_desc(self, index):
        self.desc.ops.insert(index, pb.OpDesc())
        return self.desc.ops[index]

    def remove_op(self, index):
        """Remove the operator at ``index``; writers of its outputs are recomputed."""
        op = self.ops.pop(index)
        del self.desc.ops[index]
        for name in op.output_arg_names:
            var = self._find_var_recursive(name)
            if var is not None and var.op is op:
                var.op = next((o for o in reversed(self.ops) if name in o.output_arg_names),
                              None)
        self._changed()
        return op

    # -- text ------------------------------------------------------------------------------
    def to_string(self, show_bookkeeping=False):
        lines = [f"block {self.idx} (parent {self.parent_idx}"
                 + (f", forward block {self.forward_block_idx}" if self.forward_block_idx >= 0
                    else "") + f"): {len(self.vars)} vars, {len(self.ops)} ops"]
        for v in self.vars.values():
            lines.append(f"  var {v.to_string()}")
        for i, op in enumerate(self.ops):
            lines.append(f"  op {i}: {op.to_string(show_bookkeeping)}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<Block {self.idx} parent={self.parent_idx} vars={len(self.vars)} " \
               f"ops={len(self.ops)}>"


def _check_initializer(name, init):
    """Before anything is declared: an initializer must be usable."""
    if init is None or callable(init):
        return
    if isinstance(init, dict) and isinstance(init.get("type"), str):
        return
    raise VariableError(f"parameter '{name}': initializer must be a headrace.initializer object "
                        f"(or a callable init(var, block)) or an init_attr dict with the op "
                        f"'type', got {type(init).__name__} {init!r}"[:300])


def _startup_block():
    return defaults.startup.global_block()


def _declare_twin(param, init, sblock):
    """``param``'s twin in the startup block; new there, it is initialized by ``init``."""
    sblock.create_parameter(param.name, param.shape, param.dtype, param.trainable,
                            param.optimize_attr, param.regularizer, param.gradient_clip, init,
                            param.lod_level)


def _append_initializer(param, init, sblock):
    """Append the op that initializes ``param``, a parameter of ``sblock`` (seeds: Parameter's
    constructor adds the initialize op to the global block)."""
    if callable(init):
        init(param, sblock)
        return
    attrs = {k: v for k, v in init.items() if k != "type"}
    opdef = sblock.program.registry.find(init["type"])
    if opdef is not None:  # unknown: append_op says so
        if "shape" in opdef.attrs:
            attrs.setdefault("shape", list(param.shape))
        if "dtype" in opdef.attrs:
            attrs.setdefault("dtype", dtype_enum(param.dtype))
    sblock.append_op(init["type"], {}, {"Out": param}, attrs)
