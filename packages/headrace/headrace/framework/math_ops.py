"""Python operators on Variables: ``a + b``, ``x * 2``, ``-x``, ``x < y``, ``x.astype("int64")``.

They are the methods of :class:`VariableMathMixin`, a base class of
:class:`~headrace.framework.variable.Variable` (``class Variable(VariableMathMixin)``): visible
in the class's MRO and in ``help(Variable)``, nothing is attached at import time.

Each operator appends an ordinary op to the *current block of the variable's program* (the
variable's own block outside control-flow sub-blocks; inside a ``while`` body the op lands in
the body, as in Fluid) and returns a new temporary variable ``tmp_N``; shapes come from the op's
shape inference.

- ``+ - * /`` between two Variables: ``elementwise_add/sub/mul/div`` (axis -1, NumPy-style
  broadcasting). ``**``: ``elementwise_pow``; ``@``: ``matmul``.
- with a Python (or NumPy) scalar on a floating-point variable, ``+ - * /`` become one ``scale``
  op; otherwise the scalar becomes a ``fill_constant`` of shape [1] and the variable's dtype,
  combined by the elementwise op (broadcast).
- ``< <= > >=``: ``less_than`` ... (bool output). ``==`` and ``!=`` are NOT overloaded: they stay
  identity comparisons, because Variables are graph nodes used as dict keys and list members
  (``v in vars`` must not build an op and answer with a truthy Variable). Use
  ``x.equal(y)`` / ``x.not_equal(y)`` or ``headrace.layers.equal``.
- unary ``-``: ``scale(-1)`` (integers: ``elementwise_mul`` by -1); ``abs(x)``: ``abs``.
- ``x.astype(dtype)``: ``cast``.
"""
import numbers

import numpy as np

from .. import dtypes
from ..errors import LayerError
from .builder import append_simple, constant

__all__ = ["VariableMathMixin", "binary_op", "compare_op", "cast_op"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _is_scalar(v):
    return isinstance(v, (numbers.Number, np.number)) and not isinstance(v, complex)


def _is_var(v):
    # Every Variable is a VariableMathMixin: testing the mixin keeps this module below
    # variable.py in the import graph.
    return isinstance(v, VariableMathMixin)


def _block(var):
    """Where an operator's op goes: the current block of the variable's program."""
    return var.block.program.current_block()


def _scale(var, scale=1.0, bias=0.0):
    return append_simple(_block(var), "scale", {"X": var},
                         {"scale": float(scale), "bias": float(bias), "bias_after_scale": True})


def binary_op(op_type, x, y, axis=-1):
    """``op_type`` (an elementwise op) of two Variables or a Variable and a scalar."""
    ref = x if _is_var(x) else y
    if not _is_var(ref):
        raise LayerError(f"{op_type}: at least one operand must be a Variable, got "
                         f"{type(x).__name__} and {type(y).__name__}")
    block = _block(ref)
    x = constant(block, x, ref.dtype) if _is_scalar(x) else x
    y = constant(block, y, ref.dtype) if _is_scalar(y) else y
    for name, v in (("x", x), ("y", y)):
        if not _is_var(v):
            raise LayerError(f"{op_type}: operand {name} must be a Variable or a number, got "
                             f"{type(v).__name__}")
    return append_simple(block, op_type, {"X": x, "Y": y}, {"axis": axis}, dtype=x.dtype)


def compare_op(op_type, x, y):
    """``op_type`` (less_than, equal, ...) of a Variable and a Variable or scalar: bool."""
    block = _block(x)
    if _is_scalar(y):
        y = constant(block, y, x.dtype)
    if not _is_var(y):
        raise LayerError(f"{op_type}: cannot compare a Variable with {type(y).__name__}")
    return append_simple(block, op_type, {"X": x, "Y": y}, dtype="bool", stop_gradient=True)


def cast_op(x, dtype):
    """``cast`` of ``x`` to ``dtype``."""
    dtype = dtypes.canonical(dtype)
    return append_simple(_block(x), "cast", {"X": x},
                         {"in_dtype": int(dtypes.to_proto(x.dtype)),
                          "out_dtype": int(dtypes.to_proto(dtype))}, dtype=dtype)


def _arith(op_type, reverse=False, fast=None):
    """A binary dunder method; ``fast(var, scalar)`` is the one-``scale``-op form for float
    variables (None where it does not apply, as division by 0)."""
    def method(self, other):
        if not (_is_var(other) or _is_scalar(other)):
            return NotImplemented
        if _is_scalar(other) and fast is not None and self.dtype in _FLOATS:
            result = fast(self, float(other))
            if result is not None:
                return result
        return binary_op(op_type, other, self) if reverse else binary_op(op_type, self, other)
    base = {"div": "truediv"}.get(op_type.split("_")[1], op_type.split("_")[1])
    method.__name__ = f"__{'r' if reverse else ''}{base}__"
    method.__qualname__ = f"VariableMathMixin.{method.__name__}"
    method.__doc__ = f"``{op_type}``{' (reflected)' if reverse else ''}."
    return method


def _compare(op_type):
    def method(self, other):
        if not (_is_var(other) or _is_scalar(other)):
            return NotImplemented
        return compare_op(op_type, self, other)
    method.__name__ = {"less_than": "__lt__", "less_equal": "__le__", "greater_than": "__gt__",
                       "greater_equal": "__ge__"}[op_type]
    method.__qualname__ = f"VariableMathMixin.{method.__name__}"
    method.__doc__ = f"``{op_type}``: a bool Variable."
    return method


class VariableMathMixin:
    """The Python operators of :class:`Variable`; each appends one op (see the module doc).

    ``==`` and ``!=`` are deliberately absent: Variable keeps identity comparison."""

    __slots__ = ()

    __add__ = _arith("elementwise_add", fast=lambda v, s: _scale(v, 1.0, s))
    __radd__ = _arith("elementwise_add", True, fast=lambda v, s: _scale(v, 1.0, s))
    __sub__ = _arith("elementwise_sub", fast=lambda v, s: _scale(v, 1.0, -s))
    __rsub__ = _arith("elementwise_sub", True, fast=lambda v, s: _scale(v, -1.0, s))
    __mul__ = _arith("elementwise_mul", fast=lambda v, s: _scale(v, s))
    __rmul__ = _arith("elementwise_mul", True, fast=lambda v, s: _scale(v, s))
    __truediv__ = _arith("elementwise_div", fast=lambda v, s: _scale(v, 1.0 / s) if s else None)
    __rtruediv__ = _arith("elementwise_div", True)
    __pow__ = _arith("elementwise_pow")
    __rpow__ = _arith("elementwise_pow", True)
    __lt__ = _compare("less_than")
    __le__ = _compare("less_equal")
    __gt__ = _compare("greater_than")
    __ge__ = _compare("greater_equal")

    def __neg__(self):
        """``-x``: ``scale(-1)`` (integers: ``elementwise_mul`` by -1)."""
        if self.dtype in _FLOATS:
            return _scale(self, -1.0)
        return binary_op("elementwise_mul", self, -1)

    def __abs__(self):
        """``abs(x)``: the ``abs`` op."""
        return append_simple(_block(self), "abs", {"X": self})

    def __matmul__(self, other):
        """``x @ y``: the ``matmul`` op."""
        if not _is_var(other):
            return NotImplemented
        return append_simple(_block(self), "matmul", {"X": self, "Y": other})

    def equal(self, other):
        """Elementwise ``self == other`` as a bool Variable (the ``equal`` op)."""
        return compare_op("equal", self, other)

    def not_equal(self, other):
        """Elementwise ``self != other`` as a bool Variable (the ``not_equal`` op)."""
        return compare_op("not_equal", self, other)

    def astype(self, dtype):
        """This variable cast to ``dtype`` (a ``cast`` op)."""
        return cast_op(self, dtype)
