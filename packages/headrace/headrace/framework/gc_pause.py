"""Python's cyclic garbage collector paused while a pass builds much of a program at once
(``append_backward``, ``gradients``, ``Optimizer.minimize``, ``apply_gradients``).

Such a pass makes thousands of objects that live as long as the program (an Operator, its
desc, slot tuples and kept attributes, a Variable and its meta per op) and no garbage cycles:
the collector's young passes over them as they are made are wasted (~35 of them in the
minimize of the 200-layer fc program), and a full collection of the whole process falling
inside the pass (every other fresh program of that size: the previous one is collected with
it) cost that minimize 20-60 ms. Paused, the allocations still count: the collector runs
once when the pass ends (the youngest generation, as it would have), and full collections
keep their schedule. (Unlike the executor's pause, what the pass made is not moved to the
oldest generation with gc.freeze()/gc.unfreeze(): that resets every generation's count, and
a process building program after program then never ran a full collection, its garbage
programs kept: its peak RSS grew 8 MB a program, 40 fc programs measured.)

The two pauses nest with each other in any order. A collector the user turned off stays off;
pauses in several threads end when the last one does.
"""
import contextlib
import functools
import gc
import threading

__all__ = ["gc_paused", "pausing_gc"]

_lock = threading.Lock()
_pauses = 0        # passes under way (threads may build at once)
_resume = False    # whether the last of them turns the collector back on


@contextlib.contextmanager
def gc_paused():
    """The collector paused for the ``with`` body (see the module's docstring)."""
    global _pauses, _resume
    with _lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


def pausing_gc(fn):
    """``fn`` run under :func:`gc_paused`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with gc_paused():
            return fn(*args, **kwargs)
    return wrapper
