"""Which function exports which op type to ONNX, and how plugins add their own.

The exporters of the first-party ops live in ``headrace.onnx.ops``, one op family per module
(named as the family's ops module in its plugin), each listing ``EXPORTERS = {op_type: fn}``;
adding a family is adding a module. ``fn(ctx, op)`` appends the ONNX nodes computing the op's
outputs (see :class:`headrace.onnx.context.ExportContext`).

A plugin that brings its own ops exports them through a pluggy hook of its own project
(``headrace.onnx``), announced in the ``headrace.onnx`` entry-point group, so the op plugins'
``headrace.plugins`` hooks are untouched and a plugin without ONNX support needs nothing::

    # setup.py of a plugin
    entry_points={"headrace.onnx": ["myops = myops.onnx_export"]}

    # myops/onnx_export.py
    from headrace.onnx import hookimpl

    @hookimpl
    def headrace_onnx_register_exporters(registry):
        registry.add("my_op", export_my_op)

An exporter for an op type that already has one must be asked for (``override=True``).
"""
import sys
from importlib import metadata

import pluggy

from ..errors import PluginError
from ..ops.package import iter_op_modules

__all__ = ["ENTRY_POINT_GROUP", "ExporterRegistry", "build_exporters", "hookimpl", "hookspec",
           "headrace_onnx_register_exporters"]

ENTRY_POINT_GROUP = "headrace.onnx"
BUILTIN_PACKAGE = "headrace.onnx.ops"

hookspec = pluggy.HookspecMarker("headrace.onnx")
hookimpl = pluggy.HookimplMarker("headrace.onnx")


@hookspec
def headrace_onnx_register_exporters(registry):
    """Register ONNX exporters: ``registry.add(op_type, fn)`` per op type.

    :param headrace.onnx.ExporterRegistry registry: the registry being built.
    """


class ExporterRegistry:
    """op type -> exporter function, with the name of whoever registered it."""

    def __init__(self):
        self._exporters = {}
        self._owners = {}
        self.current = "headrace"      # who is registering now (for conflict messages)

    def add(self, op_type, fn, override=False):
        if not callable(fn):
            raise PluginError(f"{self.current}: the ONNX exporter of '{op_type}' must be "
                              f"callable, got {fn!r}")
        if op_type in self._exporters and not override:
            raise PluginError(f"{self.current}: op '{op_type}' already has an ONNX exporter "
                              f"(from {self._owners[op_type]}); pass override=True to "
                              f"replace it")
        self._exporters[op_type] = fn
        self._owners[op_type] = self.current

    def get(self, op_type):
        return self._exporters.get(op_type)

    def owner(self, op_type):
        return self._owners.get(op_type)

    def __contains__(self, op_type):
        return op_type in self._exporters

    def types(self):
        return sorted(self._exporters)


def build_exporters(plugins=(), autoload=True):
    """A registry with the built-in exporters, then those of ``plugins`` (objects or modules
    with ``@hookimpl`` functions), then, when ``autoload``, those of the installed
    distributions' ``headrace.onnx`` entry points."""
    registry = ExporterRegistry()
    for module in iter_op_modules(BUILTIN_PACKAGE):
        for op_type, fn in module.EXPORTERS.items():
            registry.add(op_type, fn)
    pm = pluggy.PluginManager("headrace.onnx")
    pm.add_hookspecs(sys.modules[__name__])
    named = [(getattr(p, "__name__", repr(p)), p) for p in plugins]
    if autoload:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                named.append((ep.name, ep.load()))
            except Exception as e:
                raise PluginError(f"the ONNX exporters of plugin '{ep.name}' ({ep.value}) "
                                  f"failed to import: {type(e).__name__}: {e}") from e
    for name, plugin in named:
        pm.register(plugin, name=name)
        registry.current = name
        for impl in pm.hook.headrace_onnx_register_exporters.get_hookimpls():
            if impl.plugin is plugin:
                impl.function(registry=registry)
    registry.current = "headrace"
    return registry
