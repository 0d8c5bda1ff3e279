"""The context a shape/dtype inference rule works through.

One rule serves build time (shapes from VarDescs, unknown dims are -1) and run time (shapes of
real tensors): the rule only talks to an :class:`InferContext`, whose subclasses say where the
metadata comes from and where results go. A rule reads ``ctx.input("X")`` (a :class:`VarMeta`),
``ctx.attr("axis")``, and writes ``ctx.set_output("Out", shape, dtype)``; it reports bad input
with ``ctx.fail(...)``/``ctx.expect(...)``, which raise a :class:`~headrace.errors.ShapeError`
that the caller fills with the op's location and source line.
"""
from collections import namedtuple

from ..errors import ShapeError

__all__ = ["VarMeta", "InferContext", "DictInferContext"]


class VarMeta(namedtuple("VarMeta", "name shape dtype lod_level kind")):
    """What inference knows of a variable: name, shape (tuple, -1 unknown), dtype name,
    lod_level, and kind ('lod_tensor', 'lod_tensor_array', 'step_scopes', ...)."""
    __slots__ = ()

    @property
    def rank(self):
        return len(self.shape)


_new_meta = tuple.__new__   # _new_meta(VarMeta, (name, shape, dtype, lod_level, kind))


class InferContext:
    """Base class: subclasses implement ``_inputs``, ``_num_outputs``, ``attr`` and
    ``_output_names``; results are collected in ``self.results`` and applied by the caller only
    when the whole rule succeeds, so a failed rule changes nothing."""

    is_runtime = False

    def __init__(self, op_type):
        self.op_type = op_type
        self.results = {}  # slot -> {index: VarMeta}

    # -- to be provided by subclasses ------------------------------------------------------
    def _inputs(self, slot):
        """List of VarMeta bound to input ``slot`` (empty when unbound)."""
        raise NotImplementedError

    def _output_names(self, slot):
        """List of variable names bound to output ``slot`` (empty when unbound)."""
        raise NotImplementedError

    def attr(self, name):
        """The value of attribute ``name`` (defaults already filled in)."""
        raise NotImplementedError

    # -- what rules use --------------------------------------------------------------------
    def has_input(self, slot):
        return bool(self._inputs(slot))

    def inputs(self, slot):
        """All VarMeta of a (duplicable) input slot."""
        return list(self._inputs(slot))

    def input(self, slot):
        """The single VarMeta of input ``slot``."""
        metas = self._inputs(slot)
        if len(metas) != 1:
            self.fail(f"input slot '{slot}' must hold exactly one variable",
                      expected="1 variable", found=f"{len(metas)} variables")
        return metas[0]

    def shape(self, slot):
        """Shortcut: the shape (as a list) of the single input ``slot``."""
        return list(self.input(slot).shape)

    def dtype(self, slot):
        """Shortcut: the dtype of the single input ``slot``."""
        return self.input(slot).dtype

    def output_names(self, slot):
        """Names of the variables bound to output ``slot`` (in-place checks compare them with
        input names)."""
        return list(self._output_names(slot))

    def has_output(self, slot):
        return bool(self._output_names(slot))

    def num_outputs(self, slot):
        return len(self._output_names(slot))

    def set_output(self, slot, shape, dtype, lod_level=0, index=0, kind="lod_tensor"):
        """Declare the shape/dtype of output ``slot`` (its ``index``-th variable)."""
        names = self._output_names(slot)
        if index >= len(names):
            if not names:
                return  # an unbound optional output: nothing to set
            self.fail(f"output slot '{slot}' has {len(names)} variables, rule set #{index}")
        kind_of = type(shape)
        if kind_of is tuple or kind_of is list:   # the usual: plain ints, taken as they are
            for d in shape:
                if type(d) is not int:
                    shape = tuple(int(d) for d in shape)
                    break
            else:
                if kind_of is list:
                    shape = tuple(shape)
        else:
            shape = tuple(int(d) for d in shape)
        # tuple.__new__: a VarMeta without the namedtuple's Python-level __new__ (every
        # output of every op built goes through here).
        self.results.setdefault(slot, {})[index] = _new_meta(
            VarMeta, (names[index], shape, dtype, lod_level, kind))

    def set_output_like(self, slot, meta, shape=None, dtype=None, index=0):
        """Output ``slot`` takes ``meta``'s shape, dtype and lod_level unless overridden."""
        self.set_output(slot, meta.shape if shape is None else shape,
                        meta.dtype if dtype is None else dtype, meta.lod_level, index, meta.kind)

    def fail(self, message, *, expected=None, found=None, options=None):
        """Raise a ShapeError for this op."""
        raise ShapeError(message, op_type=self.op_type, expected=expected, found=found,
                         options=options)

    def expect(self, condition, message, *, expected=None, found=None):
        """``fail`` unless ``condition`` holds."""
        if not condition:
            self.fail(message, expected=expected, found=found)


class DictInferContext(InferContext):
    """A context over plain dicts: ``inputs`` maps slot -> list of VarMeta, ``outputs`` slot ->
    list of names, ``attrs`` name -> value. Used by tests and by the run-time check."""

    def __init__(self, op_type, inputs, outputs, attrs, runtime=False):
        super().__init__(op_type)
        self._ins = inputs
        self._outs = outputs
        self._attrs = attrs
        self.is_runtime = runtime

    def _inputs(self, slot):
        return self._ins.get(slot, [])

    def _output_names(self, slot):
        return self._outs.get(slot, [])

    def attr(self, name):
        return self._attrs[name]
