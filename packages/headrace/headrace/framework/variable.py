"""Variable and Parameter: Python views over a VarDesc.

Every property reads and writes the VarDesc itself, so the desc and the Python object can never
disagree; the only state kept in Python is construction-time information that is not part of the
desc (the op that writes the variable, a parameter's optimizer attributes and regularizer), the
name (which never changes) and ``meta()`` (dropped by whatever writes the desc).
"""
from .. import dtypes
from ..errors import VariableError
from ..ops.attrs import varint
from ..ops.infer import VarMeta, _new_meta
from ..proto import framework_pb2 as pb
from . import defaults
from .math_ops import VariableMathMixin
from .printable import printable

__all__ = ["Variable", "Parameter", "KINDS", "Declared", "declaring_block"]

_T = pb.VarType
# kind name -> VarType.Type enum
KINDS = {
    "lod_tensor": _T.LOD_TENSOR, "selected_rows": _T.SELECTED_ROWS,
    "feed_minibatch": _T.FEED_MINIBATCH, "fetch_list": _T.FETCH_LIST,
    "step_scopes": _T.STEP_SCOPES, "lod_rank_table": _T.LOD_RANK_TABLE,
    "lod_tensor_array": _T.LOD_TENSOR_ARRAY, "place_list": _T.PLACE_LIST, "reader": _T.READER,
    "raw": _T.RAW, "tuple": _T.TUPLE, "string": _T.STRING, "strings": _T.STRINGS,
    "vocab": _T.VOCAB, "feed_list": _T.FEED_LIST, "sparse_coo": _T.SPARSE_COO,
    "sparse_csr": _T.SPARSE_CSR,
}
_KIND_NAMES = {v: k for k, v in KINDS.items()}
_LOD_TENSOR = _T.LOD_TENSOR
_TENSOR_KINDS = ("lod_tensor", "lod_tensor_array", "selected_rows")
_INT64_MAX, _INT32_MAX = 2**63 - 1, 2**31 - 1


def kind_name(enum_value):
    return _KIND_NAMES.get(enum_value, f"unknown({enum_value})")


def normalize_shape(shape, name):
    """A tuple of ints, None and negative dims as -1; anything else is a VariableError."""
    if shape is None:
        return None
    if type(shape) is tuple:
        # Normalized already (inference results, VarDesc dims): the usual case, checked by a
        # plain loop (a generator in all() cost more than the check on these short tuples).
        for d in shape:
            if type(d) is not int or not -1 <= d <= _INT64_MAX:
                break
        else:
            return shape
    try:
        dims = list(shape)
    except TypeError:
        raise VariableError(f"variable '{name}': shape must be a list of ints, "
                            f"got {shape!r}") from None
    out = []
    for d in dims:
        if d is None:
            out.append(-1)
        elif isinstance(d, bool) or not hasattr(d, "__index__"):
            raise VariableError(f"variable '{name}': shape {shape!r} has a non-integer dim {d!r}")
        elif int(d) > _INT64_MAX:
            raise VariableError(f"variable '{name}': dim {d} of shape {shape!r} does not fit int64")
        else:
            out.append(max(int(d), -1))
    return tuple(out)


def normalize_lod_level(level, name):
    """None, or a LoD level: an int in [0, 2**31); anything else is a VariableError."""
    if level is None:
        return None
    if isinstance(level, bool) or not hasattr(level, "__index__") or \
            not 0 <= int(level) <= _INT32_MAX:
        raise VariableError(f"variable '{name}': lod_level must be an int >= 0, got {level!r}")
    return int(level)


def _tensor_desc(desc, create):
    """The TensorDesc inside a VarDesc for its kind, or None for kinds without one."""
    t = desc.type
    kind = kind_name(t.type)
    if kind == "lod_tensor":
        return t.lod_tensor.tensor if create or t.HasField("lod_tensor") else None
    if kind == "lod_tensor_array":
        return t.tensor_array.tensor if create or t.HasField("tensor_array") else None
    if kind == "selected_rows":
        return t.selected_rows if create or t.HasField("selected_rows") else None
    return None


_TAILS = {}   # (kind, shape, dtype, lod_level, flags) -> a VarDesc's wire bytes after its name


def init_desc(desc, name, kind, shape, dtype, lod_level, persistable, stop_gradient,
              need_check_feed):
    """Fill a new (empty) VarDesc. Fields Paddle declares required are always set.

    A program declares thousands of variables of a few shapes: the bytes that follow the name
    are made once per declaration (by ``_fill_desc`` on a scratch desc) and the new desc takes
    the name and them in one ``MergeFromString``, which leaves it as ``_fill_desc`` would
    (the same fields set, the same bytes serialized) at a third of the cost."""
    key = (kind, shape, dtype, lod_level, bool(persistable), bool(stop_gradient),
           bool(need_check_feed))
    try:
        tail = _TAILS.get(key)
        encoded = name.encode("utf-8") if type(name) is str else None
    except (TypeError, UnicodeEncodeError):   # unhashable shape, unencodable name: the slow way
        tail = encoded = None
    if encoded is None:
        _fill_desc(desc, name, kind, shape, dtype, lod_level, persistable, stop_gradient,
                   need_check_feed)
        return
    if tail is None:
        scratch = pb.VarDesc()
        _fill_desc(scratch, "", kind, shape, dtype, lod_level, persistable, stop_gradient,
                   need_check_feed)
        data = scratch.SerializeToString()
        if not data.startswith(b"\x0a\x00"):   # the name, field 1, comes first
            _fill_desc(desc, name, kind, shape, dtype, lod_level, persistable, stop_gradient,
                       need_check_feed)
            return
        if len(_TAILS) > 4096:   # bounded: shapes can be endless
            _TAILS.clear()
        tail = _TAILS[key] = data[2:]
    n = len(encoded)
    desc.MergeFromString(b"\x0a" + (_VARINT1[n] if n < 128 else varint(n)) + encoded + tail)


_VARINT1 = [bytes((n,)) for n in range(128)]


def _fill_desc(desc, name, kind, shape, dtype, lod_level, persistable, stop_gradient,
               need_check_feed):
    """init_desc, field by field."""
    desc.name = name
    if kind not in KINDS:
        raise VariableError(f"variable '{name}': unknown kind {kind!r}; valid: {', '.join(KINDS)}")
    desc.type.type = KINDS[kind]
    if kind in _TENSOR_KINDS:
        t = _tensor_desc(desc, True)
        t.data_type = dtypes.to_proto(dtype or "float32")
        del t.dims[:]
        t.dims.extend(shape or ())
        if kind != "selected_rows":
            getattr(desc.type, "lod_tensor" if kind == "lod_tensor" else "tensor_array") \
                .lod_level = lod_level or 0
    desc.persistable = bool(persistable)
    if stop_gradient:
        desc.stop_gradient = True
    if need_check_feed:
        desc.need_check_feed = True


def declared_meta(name, kind, shape, dtype, lod_level):
    """What ``meta()`` reads from a VarDesc ``init_desc`` just filled with these (normalized)
    values, for the common kind (None otherwise: read when asked)."""
    if kind != "lod_tensor":
        return None
    return _new_meta(VarMeta, (name, shape or (), dtype or "float32", lod_level or 0,
                               "lod_tensor"))


class Declared(type):
    """Metaclass of the IR views: calling the class declares into a block.

    ``Variable(block, name='x', shape=[2])`` is ``block.create_var(...)``, ``Parameter(...)``
    ``block.create_parameter(...)``, ``Operator(block, type=..., ...)`` ``block.append_op(...)``
    (seeds: python_api, where Block.create_var is ``Variable(self, ...)``). Each class says how
    in its ``_declare``. Going through the block keeps its ``vars``/``ops`` and its desc changed
    together, and a re-declared name gives back the one existing Variable (the seeds' rule:
    NewVarDesc never makes a second VarDesc of a name). The views of descs that already exist
    are made with ``_wrap``, which runs ``__init__`` without declaring anything.
    """

    def __call__(cls, *args, **kwargs):
        return cls._declare(*args, **kwargs)

    def _wrap(cls, *args, **kwargs):
        obj = cls.__new__(cls)
        obj.__init__(*args, **kwargs)
        return obj


def declaring_block(block):
    """``block``, or by default the current block of the default main program."""
    if block is None:
        return defaults.main.current_block()
    if not hasattr(block, "append_op"):  # block.py imports this module: no isinstance
        raise VariableError(f"the first argument is the Block to declare into (or None for the "
                            f"current block), got {type(block).__name__} {block!r}"[:300])
    return block


class Variable(VariableMathMixin, metaclass=Declared):
    """A named value in a block: the input or output of operators.

    ``Variable(block, name=None, shape=None, dtype=None, lod_level=None, persistable=None,
    stop_gradient=None, type="lod_tensor", need_check_feed=None)`` declares it in ``block``
    (default: the current block of the default main program), as ``block.create_var``.

    ``op`` (also ``writer``, the seeds' name) is the operator that last wrote the variable (None
    for data, parameters and variables nobody writes yet). The Python operators (``+ - * / **
    @ < <= > >=``, unary ``-``, ``abs``, ``astype``, ``equal``) come from
    :class:`VariableMathMixin`.
    """

    def __init__(self, block, desc):
        self.block = block
        self.desc = desc
        self.op = None
        self._meta = None   # meta(), read from the desc once: see there
        self._name = desc.name   # never changes (building reads it ~3 times a variable)

    @classmethod
    def _declare(cls, block=None, name=None, shape=None, dtype=None, lod_level=None,
                 persistable=None, stop_gradient=None, type="lod_tensor",
                 need_check_feed=None):
        return declaring_block(block).create_var(
            name=name, shape=shape, dtype=dtype, lod_level=lod_level, persistable=persistable,
            stop_gradient=stop_gradient, type=type, need_check_feed=need_check_feed)

    @property
    def writer(self):
        """The operator that last writes this variable in block order: ``op``."""
        return self.op

    @writer.setter
    def writer(self, op):
        self.op = op

    # -- desc-backed properties ------------------------------------------------------------
    @property
    def name(self):
        return self._name

    @property
    def kind(self):
        """'lod_tensor', 'lod_tensor_array', 'feed_minibatch', 'fetch_list', 'step_scopes'..."""
        meta = self._meta   # in step with the desc when kept: see meta()
        if meta is not None:
            return meta.kind
        return kind_name(self.desc.type.type)

    type = kind  # Fluid spelling

    @property
    def shape(self):
        meta = self._meta   # in step with the desc when kept: see meta()
        if meta is not None:
            return meta.shape
        t = _tensor_desc(self.desc, False)
        return tuple(t.dims) if t is not None else ()

    @shape.setter
    def shape(self, shape):
        t = self._tensor_or_fail("shape")
        dims = normalize_shape(shape, self.name)  # before clearing: a bad shape changes nothing
        if dims is None:
            raise VariableError(f"variable '{self.name}': shape cannot be None")
        del t.dims[:]
        t.dims.extend(dims)
        self._meta = None
        self.block._changed()

    @property
    def dtype(self):
        meta = self._meta
        if meta is not None:
            return meta.dtype
        t = _tensor_desc(self.desc, False)
        return dtypes.from_proto(t.data_type) if t is not None else None

    @dtype.setter
    def dtype(self, dtype):
        self._tensor_or_fail("dtype").data_type = dtypes.to_proto(dtype)
        self._meta = None
        self.block._changed()

    @property
    def lod_level(self):
        meta = self._meta
        if meta is not None:
            return meta.lod_level
        t = self.desc.type
        if self.kind == "lod_tensor":
            return t.lod_tensor.lod_level
        if self.kind == "lod_tensor_array":
            return t.tensor_array.lod_level
        return 0

    @lod_level.setter
    def lod_level(self, level):
        if self.kind not in ("lod_tensor", "lod_tensor_array"):
            raise VariableError(f"variable '{self.name}' of kind {self.kind} has no LoD")
        level = normalize_lod_level(level, self.name)
        if level is None:
            raise VariableError(f"variable '{self.name}': lod_level cannot be None")
        getattr(self.desc.type, "lod_tensor" if self.kind == "lod_tensor" else "tensor_array") \
            .lod_level = level
        self._meta = None
        self.block._changed()

    def _flag(name):  # noqa: N805 - a property factory for the boolean VarDesc fields
        def get(self):
            return getattr(self.desc, name)

        def set_(self, value):
            setattr(self.desc, name, bool(value))
            self.block._changed()
        return property(get, set_)

    persistable = _flag("persistable")
    stop_gradient = _flag("stop_gradient")
    need_check_feed = _flag("need_check_feed")
    is_parameter = _flag("is_parameter")
    del _flag

    def _tensor_or_fail(self, what):
        t = _tensor_desc(self.desc, True) if self.kind in _TENSOR_KINDS else None
        if t is None:
            raise VariableError(f"variable '{self.name}' of kind {self.kind} has no {what}")
        return t

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def grad(self):
        """The gradient variable ``<name>@GRAD`` made by the backward pass (``append_backward``
        or ``optimizer.minimize``): usable in ``fetch_list``. A VariableError when the program
        has no such variable (no backward pass yet, or this variable does not reach the loss)."""
        name = self.name + "@GRAD"
        var = self.block.find_var(name)
        if var is None:  # a gradient block is not an ancestor of its forward block
            var = next((b.vars[name] for b in self.block.program.blocks if name in b.vars), None)
        if var is None:
            raise VariableError(
                f"variable '{self.name}' has no gradient: its program has no variable '{name}'. "
                f"Build the backward pass first (optimizer.minimize(loss) or "
                f"headrace.append_backward(loss)) with a loss that depends on '{self.name}'")
        return var

    def meta(self):
        """The inference view (:class:`headrace.ops.VarMeta`) of this variable.

        Read from the VarDesc once and kept: building and differentiating a program asks it
        of every input of every op. What writes a declaration drops it: the setters here and
        the shape inference results a new op writes (Block._commit), the only writers of a
        variable's desc (as Operator's slots, which Operator._io keeps decoded)."""
        meta = self._meta
        if meta is not None:
            return meta
        desc = self.desc
        t = desc.type
        if t.type == _LOD_TENSOR and t.HasField("lod_tensor"):
            # The common case read in one pass.
            lt = t.lod_tensor
            td = lt.tensor
            meta = _new_meta(VarMeta, (desc.name, tuple(td.dims),
                                       dtypes.from_proto(td.data_type), lt.lod_level,
                                       "lod_tensor"))
        else:
            meta = VarMeta(self.name, self.shape, self.dtype, self.lod_level, self.kind)
        self._meta = meta
        return meta

    def to_string(self):
        """One readable line: name, dtype[shape], flags."""
        name = printable(self.name)   # as it came from the file: escaped, it forges no line
        if self.kind in _TENSOR_KINDS:
            s = f"{name} : {self.dtype}{list(self.shape)}"
            if self.kind != "lod_tensor":
                s += f" ({self.kind})"
            if self.lod_level:
                s += f" lod_level={self.lod_level}"
        else:
            s = f"{name} : {self.kind}"
        flags = [f for f in ("persistable", "stop_gradient", "need_check_feed") if
                 getattr(self.desc, f)]
        flags = ["data" if f == "need_check_feed" else f for f in flags]
        if self.desc.is_parameter:
            flags.insert(0, "parameter")
        return s + (f"  [{', '.join(flags)}]" if flags else "")

    def __repr__(self):
        return f"<{type(self).__name__} {self.to_string()}>"

    # Variables are graph nodes: identity semantics, usable as dict keys. ``==`` and ``!=``
    # stay identity comparisons on purpose (``v in list``, ``list.index``, dict lookups rely on
    # them); ``Variable.equal`` / ``layers.equal`` build the elementwise comparison op. The other
    # operators (+ - * / ** @ < <= > >= unary -, astype) are VariableMathMixin's.
    __hash__ = object.__hash__
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    # NumPy scalars and arrays on the left defer to our reflected operators (np.float32(2) * v).
    __array_ufunc__ = None


class Parameter(Variable):
    """A persistable, global variable learned by training.

    Python-only: ``trainable``, ``optimize_attr`` (e.g. ``{"learning_rate": 1.0}``, a per-
    parameter learning-rate multiplier), ``regularizer``, ``gradient_clip``, ``initializer``.
    ``trainable`` is mirrored in the desc as ``not stop_gradient`` so it survives saving.

    ``Parameter(block, name, shape, dtype="float32", lod_level=None, trainable=...,
    initializer=...)`` (the seeds' order; the rest by keyword) declares it, as
    ``block.create_parameter``: in the global block, with its initializer op in the startup
    program.
    """

    @classmethod
    def _declare(cls, block=None, name=None, shape=None, dtype="float32", lod_level=None, *,
                 trainable=True, optimize_attr=None, regularizer=None, gradient_clip=None,
                 initializer=None):
        return declaring_block(block).create_parameter(
            name, shape, dtype=dtype, trainable=trainable, optimize_attr=optimize_attr,
            regularizer=regularizer, gradient_clip=gradient_clip, initializer=initializer,
            lod_level=lod_level)

    def __init__(self, block, desc, trainable=True, optimize_attr=None, regularizer=None,
                 gradient_clip=None, initializer=None):
        super().__init__(block, desc)
        if not desc.is_parameter:
            # A new parameter. A desc that already is one (parsed, cloned) is wrapped as it is:
            # loading a program must not rewrite it (persistable, stop_gradient presence).
            desc.is_parameter = True
            desc.persistable = True
        self.optimize_attr = dict(optimize_attr or {"learning_rate": 1.0})
        self.regularizer = regularizer
        self.gradient_clip = gradient_clip
        self.initializer = initializer
        if trainable is not None:  # None: keep the desc's stop_gradient
            self.trainable = trainable

    @property
    def trainable(self):
        return not self.desc.stop_gradient

    @trainable.setter
    def trainable(self, value):
        self.desc.stop_gradient = not value
        self.block._changed()

    def python_state(self):
        """The construction-time state that is not in the desc (carried by Program.clone)."""
        return {"optimize_attr": dict(self.optimize_attr), "regularizer": self.regularizer,
                "gradient_clip": self.gradient_clip, "initializer": self.initializer}
