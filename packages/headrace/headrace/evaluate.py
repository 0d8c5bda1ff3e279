"""``headrace.eval(targets, feed=...)``: the seeds' ``pd.eval`` (seeds: variable design).

"we use pd.eval(targets=[var1, var2]) to run the related ops to get the value of var1 and
var2. var.op is used to trace the dependency of the current variable." This is
:meth:`Executor.eval` on one shared CPU executor (its prepared plans are cached, so repeated
calls cost what ``Executor.eval`` costs), reading and writing the global scope unless a
``scope`` is given: parameters come from the scope the startup program was run in.
"""
import threading

from .errors import HeadraceError
from .runtime import CPUPlace, Executor

__all__ = ["eval"]

_lock = threading.Lock()
_executor = None


def _default_executor():
    global _executor
    if _executor is None:
        with _lock:
            if _executor is None:
                _executor = Executor(CPUPlace())
    return _executor


def eval(targets, feed=None, scope=None, return_numpy=True):
    """The values of ``targets`` (a Variable, or a list of Variables of one program), running
    only the ops they depend on, on the CPU. ``feed``: {name or Variable: value} for the data
    they read; ``scope``: where persistable values (parameters) are read and written, default
    :func:`headrace.global_scope`. One target gives one array, a list a list."""
    if isinstance(targets, tuple):
        targets = list(targets)
    if isinstance(targets, list):
        programs = {id(t.block.program) for t in targets if hasattr(t, "block")}
        if len(programs) > 1:
            raise HeadraceError("headrace.eval: the targets belong to different programs; "
                                "evaluate each program's Variables in its own call")
    return _default_executor().eval(targets, feed=feed, scope=scope, return_numpy=return_numpy)
