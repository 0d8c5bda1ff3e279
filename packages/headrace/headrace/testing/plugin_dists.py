"""Installed-looking plugin distributions for tests: how plugins behave side by side (discovery
order, conflicts with the first-party plugins) without ``pip install``."""
import pathlib

from ..ops.definition import In, OpDef, Out
from ..ops.hookspecs import hookimpl
from ..ops.plugins import ENTRY_POINT_GROUP, discover
from ..ops.shape import same_as

__all__ = ["write_plugin_distribution", "package_plugin", "eager_plugin", "first_party_plugin"]


def first_party_plugin(family):
    """The name discovery gives the installed first-party plugin ``family`` ("math"):
    ``headrace-math:math`` where each part is a distribution of its own (tox and
    requirements-dev.txt install them so), ``headrace:math`` where the root ``pip install .``
    installed headrace whole, one distribution. LookupError unless exactly one is installed."""
    value = f"headrace_{family}.plugin"
    names = [name for name, ep in discover() if ep.value == value]
    if len(names) != 1:
        raise LookupError(f"first-party plugin {family!r}: expected one installed entry point "
                          f"{value!r}, found {names or 'none'}")
    return names[0]


def write_plugin_distribution(folder, dist, modules, entry_point="ops"):
    """Write distribution ``dist`` into ``folder`` (a directory on ``sys.path``): its metadata,
    with one ``headrace.plugins`` entry point ``entry_point`` naming the first module of
    ``modules``, and the modules (``{dotted name: source}``; each package on the way gets an
    empty ``__init__.py``). Returns the plugin's name as discovery spells it ("dist:ops")."""
    folder = pathlib.Path(folder)
    info = folder / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    first = next(iter(modules))
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry_point} = {first}\n")
    for name, source in modules.items():
        *packages, leaf = name.split(".")
        where = folder
        for p in packages:
            where = where / p
            where.mkdir(exist_ok=True)
            (where / "__init__.py").touch()
        (where / f"{leaf}.py").write_text(source)
    return f"{dist}:{entry_point}"


def _x_to_out_plugin(op, register_kernels):
    """A plugin object that defines op ``op`` (X -> Out, Out shaped as X) and registers its
    kernels with ``register_kernels(registry)``."""
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(OpDef(op, inputs=[In("X")], outputs=[Out("Out")],
                                  infer=same_as("X")))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            register_kernels(registry)
    return Plugin


def package_plugin(package, op, device="cpu"):
    """A plugin object (for ``build_registry(plugins=[(name, plugin)])``) that defines op
    ``op`` (X -> Out, Out shaped as X) and names ``package`` as its ``device`` kernel package,
    imported on the device's first use: how tests make a kernel package fail late."""
    return _x_to_out_plugin(op, lambda registry: registry.add_kernel_package(package, device))


def eager_plugin(op, fn=abs, device="cpu"):
    """Like ``package_plugin``, with ``fn`` registered as the ``device`` kernel at once."""
    return _x_to_out_plugin(op, lambda registry: registry.add_kernel(op, device, fn))
