"""Registering a plugin's op modules without a central list.

A plugin keeps one op family per module in an ``ops`` package; each module lists its
definitions in ``OPS``. :func:`register_ops_package` imports every module of the package and
registers them, so adding an op family is adding a module.
"""
import importlib
import os
import pkgutil

__all__ = ["iter_op_modules", "register_ops_package", "uncompiled_modules"]


def iter_op_modules(package_name):
    """Import and yield every module of ``package_name`` (sorted by name)."""
    package = importlib.import_module(package_name)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"{package_name}.{info.name}")


def register_ops_package(registry, package_name):
    """``registry.add_op`` every OpDef in ``OPS`` of every module of ``package_name``."""
    for module in iter_op_modules(package_name):
        for opdef in getattr(module, "OPS", ()):
            registry.add_op(opdef)


def uncompiled_modules(package_name):
    """The ``.pyx`` sources of ``package_name`` that have no importable module beside them: a
    plugin installed without building its Cython kernels (a pyproject.toml alone installs the
    sources as data), whose ops would otherwise silently have no kernel."""
    package = importlib.import_module(package_name)
    built = {info.name for info in pkgutil.iter_modules(package.__path__)}
    return sorted(os.path.join(d, f) for d in package.__path__ for f in os.listdir(d)
                  if f.endswith(".pyx") and not f.startswith("_") and f[:-4] not in built)
