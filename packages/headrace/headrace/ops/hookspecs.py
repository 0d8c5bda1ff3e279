"""The plugin hooks: how a plugin announces its devices, ops and kernels.

A plugin is a module (or object) with functions marked ``@hookimpl``, announced through the
``headrace.plugins`` entry-point group in its distribution's metadata::

    # setup.py of a plugin
    entry_points={"headrace.plugins": ["myops = myops.plugin"]}

    # myops/plugin.py
    from headrace.ops import hookimpl

    @hookimpl
    def headrace_register_ops(registry):
        registry.add_op(my_op_definition)

    @hookimpl
    def headrace_register_kernels(registry):
        registry.add_kernel("my_op", "cpu", "myops.kernels.cpu.my_op:forward",
                            dtypes=["float32", "float64"])

Each hook is called once per registry for every plugin, in order: the core's own plugin, then
the first-party plugins (the distributions of this repository), then the others; all
``headrace_register_devices`` first, then all ``headrace_register_ops``, then all
``headrace_register_kernels``. On a conflict the later plugin is in error. Each registration
is accepted in its own hook only (``add_device`` in the first, ``add_op`` in the second,
``add_kernel`` and ``add_kernel_package`` in the third), which is what makes that order hold.

A plugin's error withdraws that plugin only: everything it registered is taken back, it is
reported with a ``PluginWarning`` naming it and its error and listed in ``registry.failed``,
and the other plugins still load. Errors are: an exception of any kind (``SystemExit``
included) while importing the plugin or in its hooks, a function marked ``@hookimpl`` whose name
is not one of the hooks below (a misspelling such as ``headrace_register_op``), or a hook
function left unmarked. A KeyboardInterrupt stops the build instead.
"""
import pluggy

__all__ = ["hookspec", "hookimpl", "headrace_register_devices", "headrace_register_ops",
           "headrace_register_kernels"]

hookspec = pluggy.HookspecMarker("headrace")
hookimpl = pluggy.HookimplMarker("headrace")


@hookspec
def headrace_register_devices(registry):
    """Register devices: the names kernels are registered for.

    Call ``registry.add_device(name, module="mypackage.devices.mydevice")`` per device. The
    module is the device module a :class:`headrace.runtime.place.Place` whose ``device`` is
    ``name`` imports on first use (``check_available``, ``to_device``, ``to_host``,
    ``is_array``: see :mod:`headrace.devices`). The core's plugin registers ``"cpu"`` and
    ``"cuda"``. A device name registered by another plugin is an error of this plugin; a kernel
    for a device nobody registered is an error of the kernel's plugin.

    :param headrace.ops.Registry registry: the registry being built.
    """


@hookspec
def headrace_register_ops(registry):
    """Register op definitions.

    Call ``registry.add_op(opdef)`` for each :class:`headrace.ops.OpDef` the plugin provides
    (:func:`headrace.ops.register_ops_package` does it for every module of an ops package).
    Registering an op type that an earlier plugin already registered is an error of this
    plugin; since first-party plugins come first, a third party cannot replace their ops. The
    registry never modifies the definition (``registry.plugin_of(op_type)`` says who owns it).

    :param headrace.ops.Registry registry: the registry being built.
    """


@hookspec
def headrace_register_kernels(registry):
    """Register kernels, keyed by (op type, device).

    Call ``registry.add_kernel(op_type, device, kernel, dtypes=..., kind=...)`` per kernel.
    ``kernel`` is a callable or a ``"module:attribute"`` string: strings are imported on first
    use, so a device module (say Numba CUDA) is never imported by a program that does not use
    that device. ``kind`` is ``"array"`` (the default), ``"lod"`` or ``"frame"``.

    Or ``registry.add_kernel_package("myops.kernels.cpu", "cpu")``: every module of the package
    is imported the first time a kernel for that device is looked up, and lists its kernels as
    ``KERNELS = [(op_type, maker, dtypes), ...]``, an entry optionally ending in its kind:
    ``(op_type, maker, dtypes, "lod")``. A malformed entry, or an import error, makes that
    package's kernels unavailable on that device (reported with the plugin's name).

    Replacing a kernel of an earlier plugin (same op and device, a common dtype) must be asked
    for: ``add_kernel(..., override=True)``, or, in a kernel package, the op type listed in the
    module's ``OVERRIDES = ["relu", ...]``. The replacement is then used for its dtypes and
    listed in ``registry.overrides`` and by ``headrace plugins``; without it, it is an error of
    the later plugin. (To check a kernel given to ``add_kernel`` at once, the earlier plugins'
    kernel packages for its device are imported then, not on first use.) Called after every
    plugin's ``headrace_register_ops``, so kernels may be registered for ops of other plugins.

    :param headrace.ops.Registry registry: the registry being built.
    """
