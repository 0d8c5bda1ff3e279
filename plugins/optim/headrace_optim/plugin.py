"""The plugin object announced in the ``headrace.plugins`` entry-point group."""
from headrace.ops import hookimpl, register_ops_package


@hookimpl
def headrace_register_ops(registry):
    register_ops_package(registry, "headrace_optim.ops")


@hookimpl
def headrace_register_kernels(registry):
    # Imported on first use of each device: CPU kernels are Cython, CUDA kernels Numba.
    registry.add_kernel_package("headrace_optim.kernels.cpu", "cpu")
    registry.add_kernel_package("headrace_optim.kernels.cuda", "cuda")
