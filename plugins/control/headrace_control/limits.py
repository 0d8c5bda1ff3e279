"""The guard against endless ``while`` loops: a maximum number of steps per run of one op.

A process setting rather than an op attribute, so that it applies to every program alike,
programs saved by Paddle (which has no such attribute) included, and so that a program saved
here carries no attribute Paddle does not know. The limit comes from the environment variable
``HEADRACE_MAX_WHILE_STEPS`` when the plugin is imported, and :func:`set_max_while_steps`
changes it at any time (also for plans already prepared: the kernel reads it once per run of
the op, not per step).
"""
import os

from headrace.errors import HeadraceError

__all__ = ["MAX_WHILE_STEPS_ENV", "DEFAULT_MAX_WHILE_STEPS", "WhileStepLimitError",
           "max_while_steps", "set_max_while_steps"]

MAX_WHILE_STEPS_ENV = "HEADRACE_MAX_WHILE_STEPS"
# Far beyond any sequence length or iterative solver seen in practice, yet reached in seconds
# by a loop whose condition never turns false (and before its kept step scopes fill memory).
DEFAULT_MAX_WHILE_STEPS = 1_000_000


class WhileStepLimitError(HeadraceError):
    """A ``while`` ran more steps than the limit (the plan reports it as an OpError at the op)."""


def _valid(n, source):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{source}: the maximum number of while steps must be a positive "
                         f"integer, found {n!r}")
    return n


def _from_env():
    text = os.environ.get(MAX_WHILE_STEPS_ENV)
    if text is None or not text.strip():
        return DEFAULT_MAX_WHILE_STEPS
    try:
        n = int(text)
    except ValueError:
        n = text
    return _valid(n, f"environment variable {MAX_WHILE_STEPS_ENV}={text!r}")


_limit = [_from_env()]


def max_while_steps():
    """The current maximum number of steps of one run of a ``while`` op."""
    return _limit[0]


def set_max_while_steps(n=None):
    """Set the maximum number of steps of one run of a ``while`` op (``None``: the value of
    ``HEADRACE_MAX_WHILE_STEPS``, else the default). Returns the previous limit."""
    old = _limit[0]
    _limit[0] = _from_env() if n is None else _valid(n, "set_max_while_steps")
    return old
