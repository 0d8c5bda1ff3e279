"""The plugin hooks: how an op plugin announces its ops and kernels.

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

Hooks are called once per registry, each plugin on its own: a plugin whose hook raises is
reported (with its name and error) and everything it registered is withdrawn; the other plugins
still load.
"""
import pluggy

__all__ = ["hookspec", "hookimpl", "headrace_register_ops", "headrace_register_kernels"]

hookspec = pluggy.HookspecMarker("headrace")
hookimpl = pluggy.HookimplMarker("headrace")


@hookspec
def headrace_register_ops(registry):
    """Register op definitions.

    Call ``registry.add_op(opdef)`` for each :class:`headrace.ops.OpDef` the plugin provides.
    Registering an op type that another plugin already registered is an error of this plugin.

    :param headrace.ops.Registry registry: the registry being built.
    """


@hookspec
def headrace_register_kernels(registry):
    """Register kernels, keyed by (op type, device).

    Call ``registry.add_kernel(op_type, device, kernel, dtypes=...)`` per kernel. ``kernel`` is a
    callable or a ``"module:attribute"`` string: strings are imported on first use, so a device
    module (say Numba CUDA) is never imported by a program that does not use that device.
    Called after every plugin's ``headrace_register_ops``, so kernels may be registered for ops
    of other plugins.

    :param headrace.ops.Registry registry: the registry being built.
    """
