"""Hooks of the built-in core plugin, registered before any installed plugin (as pytest
registers its essential plugins first): its ops cannot be shadowed by a third party."""
from ..devices import BUILTIN_DEVICES
from ..ops.hookspecs import hookimpl
from ..ops.package import register_ops_package
from ..ops.plugins import CORE_PLUGIN_NAME as NAME

__all__ = ["NAME", "headrace_register_devices", "headrace_register_ops",
           "headrace_register_kernels"]


@hookimpl
def headrace_register_devices(registry):
    """The CPU (NumPy arrays) and CUDA (Numba device arrays; numba imported on first use)."""
    for name, module in BUILTIN_DEVICES.items():
        registry.add_device(name, module=module)


@hookimpl
def headrace_register_ops(registry):
    """The ops the core emits itself (see headrace.core_ops)."""
    register_ops_package(registry, "headrace.core_ops.ops")


@hookimpl
def headrace_register_kernels(registry):
    """Their CPU kernels (Cython, imported on first use of the CPU) and CUDA kernels (Numba);
    feed and fetch have none: the executor interprets them."""
    registry.add_kernel_package("headrace.core_ops.kernels.cpu", "cpu")
    registry.add_kernel_package("headrace.core_ops.kernels.cuda", "cuda")
