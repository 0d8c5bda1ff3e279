"""Scopes: names to values, nested. Values are Tensors, TensorArrays, lists of step scopes.

Persistable variables (parameters, optimizer state) live in the outermost scope an Executor run
is given; sub-blocks run in child scopes. ``global_scope()`` is the default, ``scope_guard``
swaps it.
"""
import contextlib

from ..errors import HeadraceError

__all__ = ["Scope", "global_scope", "scope_guard"]


class Scope:
    """A mapping of names to values with a parent; lookups fall back to the parent."""

    def __init__(self, parent=None):
        self.parent = parent
        self._vars = {}
        self._kids = []

    def new_scope(self):
        """A child scope (kept until :meth:`drop_kids`)."""
        kid = Scope(self)
        self._kids.append(kid)
        return kid

    def drop_kids(self):
        self._kids.clear()

    def set(self, name, value):
        """Bind ``name`` in this scope."""
        self._vars[name] = value

    def local(self, name, default=None):
        """The value of ``name`` in this scope only."""
        return self._vars.get(name, default)

    def find(self, name):
        """The value of ``name`` here or in the nearest ancestor; None if nowhere."""
        s = self
        while s is not None:
            v = s._vars.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    find_var = find

    def get(self, name):
        v = self.find(name)
        if v is None:
            raise HeadraceError(f"scope: no variable '{name}'")
        return v

    def erase(self, name):
        self._vars.pop(name, None)

    def names(self):
        return list(self._vars)

    def __contains__(self, name):
        return self.find(name) is not None

    def __repr__(self):
        return f"<Scope {len(self._vars)} vars, {len(self._kids)} kids>"


_global_scope = Scope()


def global_scope():
    """The default scope of Executor.run."""
    return _global_scope


@contextlib.contextmanager
def scope_guard(scope):
    """Make ``scope`` the global scope inside the block."""
    global _global_scope
    if not isinstance(scope, Scope):
        raise HeadraceError(f"scope_guard takes a Scope, got {type(scope).__name__}")
    old, _global_scope = _global_scope, scope
    try:
        yield scope
    finally:
        _global_scope = old
