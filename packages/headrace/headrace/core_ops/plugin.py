"""Hooks of the built-in core plugin, registered before any installed plugin (as pytest
registers its essential plugins first): its ops cannot be shadowed by a third party."""
from ..devices import BUILTIN_DEVICES
from ..ops.hookspecs import hookimpl

NAME = "headrace:core"


@hookimpl
def headrace_register_devices(registry):
    """The CPU (NumPy arrays) and CUDA (Numba device arrays; numba imported on first use)."""
    for name, module in BUILTIN_DEVICES.items():
        registry.add_device(name, module=module)


@hookimpl
def headrace_register_ops(registry):
    """The core's ops (filled in as they move here from the plugins)."""


@hookimpl
def headrace_register_kernels(registry):
    """The core's kernels."""
