"""Unique names for layers, parameters and temporaries: ``fc_0``, ``fc_0.w_0``, ``fc_0.tmp_0``.

A generator counts per key; :func:`guard` swaps in a fresh generator (optionally with a prefix)
so two models built in one process can get the same names, as in Fluid.
"""
import contextlib
import threading

__all__ = ["UniqueNameGenerator", "generate", "guard", "switch"]


class UniqueNameGenerator:
    """Counts per key: ``generate("fc")`` gives ``fc_0``, then ``fc_1`` ..."""

    def __init__(self, prefix=""):
        self.prefix = prefix
        self.ids = {}
        self._lock = threading.Lock()

    def __call__(self, key):
        with self._lock:
            n = self.ids.get(key, 0)
            self.ids[key] = n + 1
        return f"{self.prefix}{key}_{n}"


_generator = UniqueNameGenerator()


def generate(key):
    """A new unique name for ``key`` from the current generator."""
    return _generator(key)


def switch(new_generator=None):
    """Install ``new_generator`` (a fresh one if None); return the previous one."""
    global _generator
    old, _generator = _generator, new_generator or UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Use a fresh generator inside the block. A string argument is taken as its prefix."""
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
