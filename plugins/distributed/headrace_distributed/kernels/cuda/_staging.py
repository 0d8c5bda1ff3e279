"""CUDA kernels that stage through the host: inputs copied to the host, the CPU kernel (the MPI
call), outputs copied back to the device.

MPI here moves host memory; a CUDA-aware MPI could take device buffers directly, which these
kernels do not assume yet. The copies are queued on the executor's stream and waited for
(``to_host`` synchronizes), so a collective sees the values of the launches before it.
"""
from headrace.devices.cuda import to_device, to_host


def _host(value):
    if isinstance(value, (list, tuple)):
        return [_host(v) for v in value]
    return None if value is None else to_host(value)


def _device(value):
    if isinstance(value, (list, tuple)):
        return [_device(v) for v in value]
    return None if value is None else to_device(value)


class Staged:
    """A CPU kernel run on host copies of a CUDA op's values."""

    def __init__(self, cpu_maker, attrs, info=None):
        self.kernel = cpu_maker(attrs, info)

    def __call__(self, *inputs):
        return tuple(_device(v) for v in self.kernel(*[_host(v) for v in inputs]))


def staged(cpu_kernels):
    """``KERNELS`` for CUDA from a CPU module's ``KERNELS``: each kernel staged."""
    def maker(cpu_maker):
        return lambda attrs, info=None: Staged(cpu_maker, attrs, info)
    return [(op_type, maker(cpu_maker), dtypes) for op_type, cpu_maker, dtypes in cpu_kernels]
