"""Guards against runaway control flow: the steps of one run of a ``while``, the length of a
tensor array, and the memory a ``while`` keeps for its gradient.

Process settings rather than op attributes, so that they apply to every program alike,
programs saved by Paddle (which has no such attributes) included, and so that a program saved
here carries no attribute Paddle does not know. Each limit comes from an environment variable
when the plugin is imported, and its setter changes it at any time (also for plans already
prepared: kernels read the limits once per run of the op, not per step).

- ``HEADRACE_MAX_WHILE_STEPS`` / :func:`set_max_while_steps`: steps of one run of a ``while``.
- ``HEADRACE_MAX_ARRAY_LENGTH`` / :func:`set_max_array_length`: the index a ``write_to_array``
  may reach (a corrupt or runaway index of 2**40 would otherwise allocate without bound).
- ``HEADRACE_MAX_WHILE_MEMORY`` / :func:`set_max_while_memory`: bytes of values a ``while``
  keeps per run for its gradient (a loop that never ends grew memory until the machine gave
  out long before its step limit).
"""
import os

from headrace.errors import HeadraceError

__all__ = ["MAX_WHILE_STEPS_ENV", "DEFAULT_MAX_WHILE_STEPS", "WhileStepLimitError",
           "max_while_steps", "set_max_while_steps",
           "MAX_ARRAY_LENGTH_ENV", "DEFAULT_MAX_ARRAY_LENGTH", "ArrayLengthLimitError",
           "max_array_length", "set_max_array_length",
           "MAX_WHILE_MEMORY_ENV", "DEFAULT_MAX_WHILE_MEMORY", "WhileMemoryLimitError",
           "max_while_memory", "set_max_while_memory"]


class WhileStepLimitError(HeadraceError):
    """A ``while`` ran more steps than the limit (the plan reports it as an OpError at the op)."""


class ArrayLengthLimitError(HeadraceError):
    """A ``write_to_array`` index beyond the array length limit."""


class WhileMemoryLimitError(HeadraceError):
    """A ``while`` kept more bytes for its gradient than the limit."""


class _Limit:
    """One positive integer setting, from ``env`` or set at run time."""

    def __init__(self, env, default, what, setter):
        self.env, self.default, self.what, self.setter = env, default, what, setter
        self.value = self._from_env()

    def _valid(self, n, source):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{source}: the {self.what} must be a positive integer, "
                             f"found {n!r}")
        return n

    def _from_env(self):
        text = os.environ.get(self.env)
        if text is None or not text.strip():
            return self.default
        try:
            n = int(text)
        except ValueError:
            n = text
        return self._valid(n, f"environment variable {self.env}={text!r}")

    def set(self, n):
        old = self.value
        self.value = self._from_env() if n is None else self._valid(n, self.setter)
        return old

    def hint(self):
        return (f"raise the limit with headrace_control.{self.setter}(n) or the environment "
                f"variable {self.env} if this is meant")


MAX_WHILE_STEPS_ENV = "HEADRACE_MAX_WHILE_STEPS"
# Far beyond any sequence length or iterative solver seen in practice, yet reached in seconds
# by a loop whose condition never turns false (and before its kept step scopes fill memory).
DEFAULT_MAX_WHILE_STEPS = 1_000_000
MAX_ARRAY_LENGTH_ENV = "HEADRACE_MAX_ARRAY_LENGTH"
# Arrays are indexed by loop steps: the same order as the step limit, with room to spare.
DEFAULT_MAX_ARRAY_LENGTH = 10_000_000
MAX_WHILE_MEMORY_ENV = "HEADRACE_MAX_WHILE_MEMORY"
# 16 GiB: more than a training loop keeps on the machines this runs on, less than endless.
DEFAULT_MAX_WHILE_MEMORY = 16 << 30

STEPS = _Limit(MAX_WHILE_STEPS_ENV, DEFAULT_MAX_WHILE_STEPS,
               "maximum number of while steps", "set_max_while_steps")
ARRAY_LENGTH = _Limit(MAX_ARRAY_LENGTH_ENV, DEFAULT_MAX_ARRAY_LENGTH,
                      "maximum tensor array length", "set_max_array_length")
WHILE_MEMORY = _Limit(MAX_WHILE_MEMORY_ENV, DEFAULT_MAX_WHILE_MEMORY,
                      "maximum bytes a while keeps for its gradient", "set_max_while_memory")


def max_while_steps():
    """The current maximum number of steps of one run of a ``while`` op."""
    return STEPS.value


def set_max_while_steps(n=None):
    """Set the maximum number of steps of one run of a ``while`` op (``None``: the value of
    ``HEADRACE_MAX_WHILE_STEPS``, else the default). Returns the previous limit."""
    return STEPS.set(n)


def max_array_length():
    """The current maximum length of a tensor array (a write at index >= it is refused)."""
    return ARRAY_LENGTH.value


def set_max_array_length(n=None):
    """Set the maximum tensor array length (``None``: ``HEADRACE_MAX_ARRAY_LENGTH``, else the
    default). Returns the previous limit."""
    return ARRAY_LENGTH.set(n)


def max_while_memory():
    """The current maximum of bytes one run of a ``while`` keeps for its gradient."""
    return WHILE_MEMORY.value


def set_max_while_memory(n=None):
    """Set the maximum bytes one run of a ``while`` keeps for its gradient (``None``:
    ``HEADRACE_MAX_WHILE_MEMORY``, else the default). Returns the previous limit."""
    return WHILE_MEMORY.set(n)
