"""Finding plugins and building registries from them.

Installed plugins announce themselves in the ``headrace.plugins`` entry-point group. Setting
``HEADRACE_DISABLE_PLUGIN_AUTOLOAD=1`` turns discovery off (as PYTEST_DISABLE_PLUGIN_AUTOLOAD
does for pytest); explicit plugins are still registered.

Order: the core's own plugin first, then the first-party plugins (the distributions of this
repository), then the others, each group in the order given (discovered ones sorted by name).
Every hook runs plugin by plugin in that order, so on a conflict (the same op type, device, or
an overlapping kernel without ``override=True``) the later plugin is the one in error, and a
third party can never shadow a first-party op whatever its name.

A plugin that fails to import, has a hook that is not in :mod:`headrace.ops.hookspecs` (a
misspelled name), or whose hook raises anything (SystemExit included) is reported with a
:class:`PluginWarning` naming it and its error, recorded in ``registry.failed``, and everything it
registered is withdrawn; the others still load. A KeyboardInterrupt stops the build and is
re-raised: no registry is returned, and the default registry is published only once complete.
"""
import contextlib
import difflib
import importlib
import logging
import os
import re
import threading
from importlib import metadata

import pluggy

from ..errors import PluginError
from . import hookspecs
from .registry import PluginWarning, Registry, plugin_warning

__all__ = ["ENTRY_POINT_GROUP", "AUTOLOAD_ENV", "CORE_PLUGIN", "CORE_PLUGIN_NAME", "FIRST_PARTY",
           "PluginWarning",
           "build_registry", "default_registry", "set_default_registry", "registry_guard",
           "discover"]

_log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "headrace.plugins"
# The core's own plugin, loaded by module name first of all (as pytest loads its essential
# plugins): the core depends on it as on any plugin, through the hooks, never by a static
# import (core_ops imports headrace.ops for hookimpl, so that would be a cycle).
CORE_PLUGIN, CORE_PLUGIN_NAME = "headrace.core_ops.plugin", "headrace:core"
AUTOLOAD_ENV = "HEADRACE_DISABLE_PLUGIN_AUTOLOAD"
# Distributions whose plugins load before any third party's (the core is "headrace").
FIRST_PARTY = ("headrace", "headrace-tensor", "headrace-math", "headrace-nn", "headrace-optim",
               "headrace-control", "headrace-distributed")
# The hooks, in the order they run: devices before the kernels that name them, every plugin's
# ops before any kernels (a kernel may target another plugin's op).
HOOKS = ("headrace_register_devices", "headrace_register_ops", "headrace_register_kernels")


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


def _distribution(name):
    """The normalized distribution of plugin ``name`` ("dist:entry point"), or None."""
    dist, sep, _ = name.partition(":")
    return re.sub(r"[-_.]+", "-", dist).lower() if sep and dist else None


def _report(registry, name, error):
    registry.failed[name] = error
    plugin_warning(f"headrace plugin {name!r} failed and was skipped: "
                   f"{type(error).__name__}: {error}")


def _check_hooks(pm, plugin, name):
    """pluggy's ``check_pending`` for one plugin, plus what pluggy cannot see: a hook function
    left without ``@hookimpl`` (pluggy ignores it) and hook wrappers (the registry calls each
    implementation itself, so a wrapper would never run)."""
    for caller in pm.get_hookcallers(plugin) or ():
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            if not caller.has_spec() and not impl.optionalhook:
                close = difflib.get_close_matches(caller.name, HOOKS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise PluginError(f"plugin {name!r}: unknown hook {caller.name!r}{hint} "
                                  f"(the hooks are {', '.join(HOOKS)})")
            if impl.hookwrapper or getattr(impl, "wrapper", False):
                raise PluginError(f"plugin {name!r}: {caller.name} is a hook wrapper; "
                                  f"headrace hooks are plain functions")
    marked = {c.name for c in pm.get_hookcallers(plugin) or ()}
    for hook in HOOKS:
        if callable(getattr(plugin, hook, None)) and hook not in marked:
            raise PluginError(f"plugin {name!r}: {hook} is not marked @hookimpl "
                              f"(from headrace.ops import hookimpl), so it would never run")


def _candidates(plugins, autoload):
    """``(name, distribution, load)`` of every plugin to register, in load order."""
    found = []
    for p in plugins:
        name, obj = p if isinstance(p, tuple) else (getattr(p, "__name__", repr(p)), p)
        found.append((name, _distribution(name), lambda obj=obj: obj))
    if _autoload_enabled() if autoload is None else autoload:
        found.extend((name, _distribution(name), ep.load) for name, ep in discover())
    # sorted() is stable: within each group the given order stays.
    found.sort(key=lambda c: c[1] not in FIRST_PARTY)
    core = (CORE_PLUGIN_NAME, "headrace", lambda: importlib.import_module(CORE_PLUGIN))
    return [core] + found


def build_registry(plugins=(), autoload=None):
    """A new Registry from ``plugins`` (modules or objects with hook functions, or
    ``(name, plugin)`` pairs) plus, when ``autoload`` (default: unless the environment turns it
    off), every installed plugin; the core's own plugin is always first."""
    registry = Registry()
    pm = pluggy.PluginManager("headrace")
    pm.add_hookspecs(hookspecs)
    order = {}
    for name, dist, load in _candidates(plugins, autoload):
        registry.distributions[name] = dist
        plugin = None
        try:
            plugin = load()
            pm.register(plugin, name=name)
            _check_hooks(pm, plugin, name)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # a broken plugin, even one calling sys.exit(), is skipped
            if plugin is not None and pm.is_registered(plugin):
                pm.unregister(plugin)
            _report(registry, name, e)
            continue
        order[name] = len(order)
    for hook in HOOKS:
        # Our order, not pluggy's (which tryfirst/trylast could change): the earlier plugin
        # wins a conflict.
        impls = sorted(getattr(pm.hook, hook).get_hookimpls(),
                       key=lambda impl: order[impl.plugin_name])
        for impl in impls:
            name = impl.plugin_name
            if name in registry.failed:
                continue
            try:
                with registry._running(name, hook):
                    impl.function(registry=registry)
            except KeyboardInterrupt:
                raise
            except BaseException as e:
                registry.withdraw_plugin(name)
                _report(registry, name, e)
    registry.plugins = [n for n in order if n not in registry.failed]
    _log.debug("registry built: plugins %s%s", ", ".join(registry.plugins),
               f"; failed: {', '.join(registry.failed)}" if registry.failed else "")
    for error in registry._deferred:
        plugin_warning(f"headrace {error}")
    registry._deferred = []
    return registry


_default = None
_default_lock = threading.Lock()


def default_registry():
    """The process-wide registry, built from the installed plugins on first use (published only
    once complete: an interrupted build leaves nothing behind, and the next call builds)."""
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
