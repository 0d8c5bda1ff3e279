"""CUDA kernels of this op family: the CPU kernels staged through the host (_staging)."""
from headrace_distributed.kernels.cpu.coalesce_tensor import KERNELS as CPU_KERNELS

from ._staging import staged

KERNELS = staged(CPU_KERNELS)
