"""Finding plugins and building registries from them.

Installed plugins announce themselves in the ``headrace.plugins`` entry-point group. Setting
``HEADRACE_DISABLE_PLUGIN_AUTOLOAD=1`` turns discovery off (as PYTEST_DISABLE_PLUGIN_AUTOLOAD
does for pytest); explicit plugins are still registered. A plugin that fails to import, or whose
hook raises, is reported with a :class:`PluginWarning` naming it and its error, recorded in
``registry.failed``, and skipped.
"""
import contextlib
import os
import threading
import warnings
from importlib import metadata

import pluggy

from ..errors import PluginError
from . import hookspecs
from .registry import Registry

__all__ = ["ENTRY_POINT_GROUP", "AUTOLOAD_ENV", "PluginWarning", "build_registry",
           "default_registry", "set_default_registry", "registry_guard", "discover"]

ENTRY_POINT_GROUP = "headrace.plugins"
AUTOLOAD_ENV = "HEADRACE_DISABLE_PLUGIN_AUTOLOAD"


class PluginWarning(UserWarning):
    """A plugin failed to load and was skipped."""


def discover():
    """The entry points of installed plugins, as ``(name, EntryPoint)`` sorted by name.

    The name is ``<distribution>:<entry point name>`` so two distributions cannot collide.
    """
    found = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        found.setdefault(f"{dist}:{ep.name}", ep)
    return sorted(found.items())


def _autoload_enabled():
    return os.environ.get(AUTOLOAD_ENV, "").strip().lower() in ("", "0", "false", "no")


def _report(registry, name, error):
    registry.failed[name] = error
    warnings.warn(f"headrace plugin {name!r} failed and was skipped: "
                  f"{type(error).__name__}: {error}", PluginWarning, stacklevel=3)


def build_registry(plugins=(), autoload=None):
    """A new Registry from ``plugins`` (modules or objects with hook functions, or
    ``(name, plugin)`` pairs) plus, when ``autoload`` (default: unless the environment turns it
    off), every installed plugin."""
    registry = Registry()
    pm = pluggy.PluginManager("headrace")
    pm.add_hookspecs(hookspecs)
    # The core's own plugin comes first, always: it owns the ops the core emits.
    from ..core_ops import plugin as core_plugin
    candidates = [(core_plugin.NAME, lambda: core_plugin)]
    for p in plugins:
        name, obj = p if isinstance(p, tuple) else (getattr(p, "__name__", repr(p)), p)
        candidates.append((name, lambda obj=obj: obj))
    if _autoload_enabled() if autoload is None else autoload:
        candidates.extend((name, ep.load) for name, ep in discover())
    for name, load in candidates:
        try:
            pm.register(load(), name=name)
        except Exception as e:  # a broken plugin must not take the others down
            _report(registry, name, e)
    # Ops first for every plugin, then kernels: a kernel may target another plugin's op.
    for hook in ("headrace_register_ops", "headrace_register_kernels"):
        caller = getattr(pm.hook, hook)
        # get_hookimpls() lists plain impls in registration order (pluggy *calls* them in
        # reverse); going in registration order makes the earlier plugin win a duplicate op.
        for impl in caller.get_hookimpls():
            name = impl.plugin_name
            if name in registry.failed:
                continue
            try:
                with registry._running(name):
                    impl.function(registry=registry)
            except Exception as e:
                registry.withdraw_plugin(name)
                _report(registry, name, e)
    registry.plugins = [n for n, _ in pm.list_name_plugin() if n not in registry.failed]
    return registry


_default = None
_default_lock = threading.Lock()


def default_registry():
    """The process-wide registry, built from the installed plugins on first use."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = build_registry()
    return _default


def set_default_registry(registry):
    """Replace the process-wide registry (None: rebuild on next use); return the old one."""
    global _default
    if registry is not None and not isinstance(registry, Registry):
        raise PluginError(f"expected a Registry, got {type(registry).__name__}")
    old, _default = _default, registry
    return old


@contextlib.contextmanager
def registry_guard(registry):
    """Use ``registry`` as the default inside the block (tests, isolated op sets)."""
    old = set_default_registry(registry)
    try:
        yield registry
    finally:
        set_default_registry(old)
