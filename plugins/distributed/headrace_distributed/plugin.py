"""The plugin object announced in the ``headrace.plugins`` entry-point group."""
from headrace.ops import hookimpl, register_ops_package


@hookimpl
def headrace_register_ops(registry):
    register_ops_package(registry, "headrace_distributed.ops")


@hookimpl
def headrace_register_kernels(registry):
    # Python kernels: they call MPI (through mpi4py, imported when a collective first runs),
    # so the ops list and programs build on machines without MPI.
    registry.add_kernel_package("headrace_distributed.kernels.cpu", "cpu")
    registry.add_kernel_package("headrace_distributed.kernels.cuda", "cuda")
