"""Python's cyclic garbage collector paused while headrace makes many long-lived objects at
once: the passes that build much of a program (``append_backward``, ``gradients``,
``Optimizer.minimize``, ``apply_gradients``) and the executor preparing a plan.

Such work makes thousands of objects that live as long as the program or the plan (an
Operator, its desc, slot tuples and kept attributes, a Variable and its meta per op; an
instruction, a kernel and its info per op) and no garbage cycles: the collector's young
passes over them as they are made are wasted (~35 of them in the minimize of the 200-layer fc
program), and a full collection of the whole process falling inside the work (every other
fresh program of that size: the previous one is collected with it) cost that minimize
20-60 ms. Paused, the allocations still count: the collector runs when the pause ends (the
youngest generation, as it would have), and full collections keep their schedule.

``promote=True`` (the executor's preparation) also moves what the pause made to the oldest
generation without a pass over it (``gc.freeze()`` then ``gc.unfreeze()``): the first young
collection after the pause would otherwise look at all of it, 16,000 objects for the 1603-op
program, 1.3-6 ms of its first step. CPython schedules a full collection by the objects that
reached the oldest generation through collections since the last full one (a quarter of
those it found there); objects moved by ``unfreeze`` are not counted, so a process preparing
program after program would never collect its dead programs (60 small programs: no full
collection, 86,000 garbage objects kept). Headrace counts what it moved itself, and when a
promotion would take that past a quarter of the oldest generation as the last full collection
left it, it runs the full collection CPython would have run by then had it counted them
(which moves the pause's objects to the oldest generation too) instead. Stopping promotion
there instead (the objects then aging through the young generations, counted) let dead
programs pile up twice as long between full collections: a training loop cloning its
program every 100 steps grew 7 MB after its first 1,000 steps (81 -> 88 MB), flat with the
collection. Objects the process froze itself
(``gc.get_freeze_count()``, before forking workers) are never thawed: no promotion then.

The pauses nest with each other in any order and across threads: the collector is turned back
on when the last one ends (promoting if any of them asked). A collector the user turned off
stays off.
"""
import contextlib
import functools
import gc
import threading

__all__ = ["gc_paused", "pausing_gc"]

_lock = threading.Lock()
_pauses = 0        # pauses under way (threads may build or prepare at once)
_resume = False    # whether the last of them turns the collector back on
_promote = False   # whether one of them asked to promote what the pause made
_promoted = 0      # objects moved to the oldest generation since the last full collection
_long_lived = -1   # the oldest generation's size after the last full collection (-1: unknown)


def _after_collection(phase, info):
    global _promoted, _long_lived
    if phase == "stop" and info.get("generation") == 2:
        _promoted = 0
        _long_lived = len(gc.get_objects(2))


def _end_pause(promote):
    """The collector back on after the outermost pause (under ``_lock``); whether the full
    collection that replaces a promotion is due (run by the caller, outside the lock: the
    finalizers a collection runs may build programs and pause again)."""
    global _promoted, _long_lived
    if promote and not gc.get_freeze_count():
        if _long_lived < 0:
            # The first promotion: the oldest generation's size now, once, and after every
            # full collection from now on (hooked here, not at import: listing the oldest
            # generation at each full collection is no cost of a process that never
            # promotes, one that only builds programs or runs none).
            _long_lived = len(gc.get_objects(2))
            gc.callbacks.append(_after_collection)
        # freeze() takes every generation: count the young ones (what is promoted).
        young = len(gc.get_objects(0)) + len(gc.get_objects(1))
        if _promoted + young > _long_lived // 4:
            gc.enable()
            return True   # the count starts again with it (_after_collection)
        _promoted += young
        gc.freeze()
        gc.unfreeze()
    gc.enable()
    return False


@contextlib.contextmanager
def gc_paused(promote=False):
    """The collector paused for the ``with`` body (see the module's docstring)."""
    global _pauses, _resume, _promote
    with _lock:
        if _pauses == 0:
            _resume, _promote = gc.isenabled(), False
            gc.disable()
        _pauses += 1
        _promote = _promote or promote
    try:
        yield
    finally:
        collect = False
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                collect = _end_pause(_promote)
        if collect:
            gc.collect()


def pausing_gc(fn):
    """``fn`` run under :func:`gc_paused`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with gc_paused():
            return fn(*args, **kwargs)
    return wrapper
