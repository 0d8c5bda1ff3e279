"""headrace's one exception hierarchy.

Every error a user can provoke derives from :class:`HeadraceError`. Errors about an operator
carry where it is (op type, block, index), the user's source line that created it, and what was
expected against what was found, so the message alone is enough to fix the program.
"""

__all__ = [
    "HeadraceError", "ProgramError", "ProgramParseError", "VariableError", "OpError",
    "OpDefinitionError", "UnknownOpError", "OpValidationError", "ShapeError", "PluginError",
    "KernelNotFoundError", "LayerError", "NanInfError",
]


class HeadraceError(Exception):
    """Base of every headrace error."""


class ProgramError(HeadraceError):
    """A misuse of the Program/Block API (bad block index, rollback past the global block...)."""


class ProgramParseError(ProgramError):
    """Bytes that are not a valid headrace/Paddle ProgramDesc."""


class VariableError(ProgramError):
    """A bad variable declaration: a conflicting re-declaration, an unknown dtype, a bad shape."""


class LayerError(HeadraceError, ValueError):
    """A bad argument to a layer, initializer, optimizer or other Python API builder; the message
    names the function and the argument (``fc: argument 'size' must be ...``)."""


class OpDefinitionError(HeadraceError):
    """An op definition that breaks the schema rules (raised to plugin authors)."""


class PluginError(HeadraceError):
    """A plugin that failed to load or registered something invalid."""


class OpError(HeadraceError):
    """An error concerning one operator.

    Attributes ``op_type``, ``block_idx``, ``op_idx``, ``source`` (the user's line that created
    the op, or None), ``expected`` and ``found`` are kept for programmatic use; ``str()`` gives the
    whole story in one message.
    """

    def __init__(self, message, *, op_type=None, block_idx=None, op_idx=None, source=None,
                 expected=None, found=None, options=None):
        self.reason = message
        self.op_type = op_type
        self.block_idx = block_idx
        self.op_idx = op_idx
        self.source = source
        self.expected = expected
        self.found = found
        self.options = options
        super().__init__(self._render())

    def _render(self):
        where = f"op '{self.op_type}'" if self.op_type else "op"
        if self.block_idx is not None:
            where += f" (block {self.block_idx}"
            where += f", op #{self.op_idx})" if self.op_idx is not None else ")"
        lines = [f"{where}: {self.reason}"]
        if self.expected is not None:
            lines.append(f"  expected: {self.expected}")
        if self.found is not None:
            lines.append(f"  found:    {self.found}")
        if self.options:
            lines.append(f"  valid options: {', '.join(map(str, self.options))}")
        if self.source:
            lines.append(f"  created at: {self.source}")
        return "\n".join(lines)

    def locate(self, *, op_type=None, block_idx=None, op_idx=None, source=None):
        """Fill in location fields that are still unknown and re-render the message."""
        self.op_type = self.op_type or op_type
        self.block_idx = self.block_idx if self.block_idx is not None else block_idx
        self.op_idx = self.op_idx if self.op_idx is not None else op_idx
        self.source = self.source or source
        self.args = (self._render(),)
        return self

    def __str__(self):
        return self.args[0] if self.args else self._render()


class UnknownOpError(OpError):
    """An op type no plugin registered."""


class OpValidationError(OpError):
    """An op whose slots or attributes do not match its definition."""


class ShapeError(OpError):
    """Shape or dtype inference found inputs the op cannot take."""


class KernelNotFoundError(OpError):
    """No kernel is registered for an op on a device and dtype."""


class NanInfError(OpError):
    """A NaN or Inf found by the executor's check (``check_nan_inf``): in an op's output, or in
    a value the run started with (named with the first op reading it). ``variable`` is the
    offending variable's name; ``gradient_of`` describes the forward op a gradient op
    differentiates (where the user's line is more telling than ``append_backward``'s)."""

    def __init__(self, message, *, variable=None, gradient_of=None, **where):
        self.variable = variable
        self.gradient_of = gradient_of
        super().__init__(message, **where)

    def _render(self):
        text = super()._render()
        return text + (f"\n  gradient of: {self.gradient_of}" if self.gradient_of else "")
