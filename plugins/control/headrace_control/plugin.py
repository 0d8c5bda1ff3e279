"""The plugin object announced in the ``headrace.plugins`` entry-point group."""
from headrace.ops import hookimpl, register_ops_package


@hookimpl
def headrace_register_ops(registry):
    register_ops_package(registry, "headrace_control.ops")


@hookimpl
def headrace_register_kernels(registry):
    # Imported on first use of the device: CPU kernels are Cython, CUDA kernels Numba; the
    # control-flow kernels drive sub-plans and serve every device.
    registry.add_kernel_package("headrace_control.kernels.cpu", "cpu")
    registry.add_kernel_package("headrace_control.kernels.cuda", "cuda")
    for device in ("cpu", "cuda"):
        registry.add_kernel_package("headrace_control.kernels.flow", device)
