"""The op definition: the schema every operator of a type must satisfy (the contract).

An op is a small data object, as a JAX primitive is: its slots, its typed attributes with
defaults and checks, its documentation, and the rules attached to it (shape/dtype inference now;
the gradient maker, filled in by the autodiff layer). ``append_op`` validates against it; the
executor looks kernels up by its type; ``headrace ops`` prints it.

Example (a whole op definition)::

    scale = OpDef(
        "scale",
        inputs=[In("X", "input tensor")],
        outputs=[Out("Out", "scale * X + bias")],
        attrs=[Attr("scale", "float", 1.0), Attr("bias", "float", 0.0),
               Attr("bias_after_scale", "bool", True)],
        infer=same_as("X"),
        doc="Out = scale * X + bias (or scale * (X + bias)).",
    )
"""
from ..errors import OpDefinitionError
from .attrs import ATTR_TYPES, coerce

__all__ = ["Slot", "In", "Out", "AttrDef", "Attr", "OpDef", "REQUIRED", "COMMON_ATTRS"]


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()  # default of an attribute the user must always give


class Slot:
    """An input or output slot of an op.

    duplicable: the slot takes a list of variables (``sum``'s X).
    optional: the slot may be left unbound.
    intermediate: an output kept only for the backward pass (``XShape``); created if not given.
    dtypes: the element types the slot accepts (None: any).
    """
    __slots__ = ("name", "doc", "duplicable", "optional", "intermediate", "dtypes")

    def __init__(self, name, doc="", *, duplicable=False, optional=False, intermediate=False,
                 dtypes=None):
        self.name = name
        self.doc = doc
        self.duplicable = duplicable
        self.optional = optional
        self.intermediate = intermediate
        self.dtypes = tuple(dtypes) if dtypes is not None else None

    def flags(self):
        """Short flag words for listings: dup, opt, int."""
        return [w for w, on in (("dup", self.duplicable), ("opt", self.optional),
                                ("int.", self.intermediate)) if on]

    def __repr__(self):
        flags = ",".join(self.flags())
        return f"{self.name}[{flags}]" if flags else self.name


def In(name, doc="", *, duplicable=False, optional=False, dtypes=None):
    """An input slot."""
    return Slot(name, doc, duplicable=duplicable, optional=optional, dtypes=dtypes)


def Out(name, doc="", *, duplicable=False, optional=False, intermediate=False, dtypes=None):
    """An output slot."""
    return Slot(name, doc, duplicable=duplicable, optional=optional,
                intermediate=intermediate, dtypes=dtypes)


class AttrDef:
    """A typed attribute: name, type name (see ``attrs.ATTR_TYPES``), default, checks.

    choices: the allowed values. check: ``f(value) -> None or str``, the string saying what is
    wrong (e.g. ``"must be > 0"``).
    """
    __slots__ = ("name", "type", "default", "doc", "choices", "check")

    def __init__(self, name, type, default=REQUIRED, doc="", *, choices=None, check=None):
        if type not in ATTR_TYPES:
            raise OpDefinitionError(
                f"attribute '{name}': unknown type {type!r}; valid: {', '.join(ATTR_TYPES)}")
        self.name = name
        self.type = type
        self.doc = doc
        self.choices = tuple(choices) if choices is not None else None
        self.check = check
        if default is not REQUIRED:
            err = self.validate(default)
            if isinstance(err, str):
                raise OpDefinitionError(f"attribute '{name}': default {default!r} {err}")
            default = err[0]
        self.default = default

    @property
    def required(self):
        return self.default is REQUIRED

    def validate(self, value):
        """``(canonical_value,)`` when ``value`` is acceptable, else a string saying why not."""
        try:
            value = coerce(self.type, value)
        except TypeError:
            return f"is not of type {self.type} (got {type(value).__name__} {value!r})"
        except ValueError as e:
            return f"has a bad value: {e}"
        if self.choices is not None and value not in self.choices:
            return f"must be one of {list(self.choices)} (got {value!r})"
        if self.check is not None:
            msg = self.check(value)
            if msg:
                return f"{msg} (got {value!r})"
        return (value,)

    def __repr__(self):
        d = "" if self.required else f" = {self.default!r}"
        return f"{self.name}: {self.type}{d}"


def Attr(name, type, default=REQUIRED, doc="", *, choices=None, check=None):
    """An attribute definition."""
    return AttrDef(name, type, default, doc, choices=choices, check=check)


# Bookkeeping attributes that Paddle puts on every op. They never change what an op computes;
# any op accepts them, and headrace writes op_role and op_callstack itself.
COMMON_ATTRS = {a.name: a for a in (
    Attr("op_role", "int", 0, "forward 0, backward 1, optimize 2; loss 256 or-ed in"),
    Attr("op_role_var", "strings", [], "parameter/gradient pairs an op works on"),
    Attr("op_namescope", "string", "/", "name scope the op was created in"),
    Attr("op_callstack", "strings", [], "where in the user's Python the op was created"),
    Attr("op_device", "string", "", "device hint"),
    Attr("with_quant_attr", "bool", False, "quantization bookkeeping"),
    Attr("use_mkldnn", "bool", False, "a Paddle backend hint (ignored)"),
    Attr("use_cudnn", "bool", False, "a Paddle backend hint (ignored)"),
)}


class OpDef:
    """The definition of one op type.

    type: the op type name (Paddle's, see reference/op-conventions.md).
    inputs / outputs: :class:`Slot` lists. attrs: :class:`AttrDef` list.
    infer: ``f(ctx)`` that checks inputs and sets output shapes/dtypes through an
        :class:`headrace.ops.InferContext`; required unless ``no_kernel`` ops infer nothing.
    grad: the gradient maker, filled in by the autodiff layer (None until then).
    differentiable: False for ops that have no gradient by nature (feed, random, comparisons).
    no_kernel: the executor interprets the op itself (feed, fetch, while, conditional_block).
    version: the op's definition version (written to the program's op_version_map).
    host_only: None, or why the op runs on the host only (file or console I/O, say); an op with
        a CPU kernel and no CUDA kernel must say why (tests/test_cuda_hygiene.py).
    seed_attr: None, or the name of the int attribute that seeds a random op: built with 0
        there in a program that has a ``random_seed``, the op gets a seed derived from it
        (framework/seeds.py), so the serialized program draws the same numbers anywhere. Only
        for ops whose seed starts a reproducible stream that advances run after run.
    """
    __slots__ = ("type", "inputs", "outputs", "attrs", "doc", "infer", "grad", "differentiable",
                 "no_kernel", "version", "host_only", "seed_attr", "_in", "_out")

    def __init__(self, type, *, inputs=(), outputs=(), attrs=(), doc="", infer=None, grad=None,
                 differentiable=True, no_kernel=False, version=1, host_only=None,
                 seed_attr=None):
        self.type = type
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        attrs = tuple(attrs)
        self.attrs = {a.name: a for a in attrs}
        if len(self.attrs) != len(attrs):
            raise OpDefinitionError(f"op '{type}': duplicate attribute names")
        self.doc = doc
        self.infer = infer
        self.grad = grad
        self.differentiable = differentiable
        self.no_kernel = no_kernel
        self.version = version
        self.host_only = host_only
        self.seed_attr = seed_attr
        self._in = {s.name: s for s in self.inputs}
        self._out = {s.name: s for s in self.outputs}
        self._check_schema()

    def _check_schema(self):
        if not isinstance(self.type, str) or not self.type.isidentifier():
            raise OpDefinitionError(f"op type {self.type!r} is not an identifier")
        for kind, slots, index in (("input", self.inputs, self._in),
                                   ("output", self.outputs, self._out)):
            if len(index) != len(slots):
                raise OpDefinitionError(f"op '{self.type}': duplicate {kind} slot names")
            for s in slots:
                if not isinstance(s, Slot):
                    raise OpDefinitionError(f"op '{self.type}': {kind} {s!r} is not a Slot")
        if self.infer is not None and not callable(self.infer):
            raise OpDefinitionError(f"op '{self.type}': infer must be callable")
        if self.infer is None and not self.no_kernel:
            raise OpDefinitionError(f"op '{self.type}': an op with kernels needs an infer rule")
        if self.host_only is not None and (not isinstance(self.host_only, str)
                                           or not self.host_only.strip()):
            raise OpDefinitionError(f"op '{self.type}': host_only must say why the op runs on "
                                    f"the host only (a non-empty string), found "
                                    f"{self.host_only!r}")
        if self.seed_attr is not None and (self.seed_attr not in self.attrs or
                                           self.attrs[self.seed_attr].type != "int"):
            raise OpDefinitionError(f"op '{self.type}': seed_attr {self.seed_attr!r} must name "
                                    f"one of its int attributes")

    def input(self, name):
        """The input slot ``name`` or None."""
        return self._in.get(name)

    def output(self, name):
        """The output slot ``name`` or None."""
        return self._out.get(name)

    def attr(self, name):
        """The declared (or common bookkeeping) attribute ``name``, or None."""
        return self.attrs.get(name) or COMMON_ATTRS.get(name)

    def __repr__(self):
        return f"<OpDef {self.type}({', '.join(map(repr, self.inputs))}) -> " \
               f"({', '.join(map(repr, self.outputs))})>"
