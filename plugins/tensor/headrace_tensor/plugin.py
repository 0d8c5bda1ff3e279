"""The plugin object announced in the ``headrace.plugins`` entry-point group."""
from headrace.ops import hookimpl, register_ops_package


@hookimpl
def headrace_register_ops(registry):
    register_ops_package(registry, "headrace_tensor.ops")


@hookimpl
def headrace_register_kernels(registry):
    # Imported on first use of the device: CPU kernels are Cython.
    registry.add_kernel_package("headrace_tensor.kernels.cpu", "cpu")
    registry.add_kernel_package("headrace_tensor.kernels.cuda", "cuda")
