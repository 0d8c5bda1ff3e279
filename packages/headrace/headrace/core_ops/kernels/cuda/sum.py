"""sum on CUDA: the elementwise sum of N same-shaped inputs (how gradient contributions add
up), or of N tensor arrays position by position.

As on the CPU the first two inputs are added into a new output in one launch and each further
input is added into it in place (one launch per input, one thread per element), so the result
equals ((x0 + x1) + x2) + ... exactly. Inputs with no elements are skipped (absent
contributions), unless every input is empty.
"""
import numpy as np
from numba import cuda

from headrace.core_ops.kernels.cpu.sum import Sum as CpuSum
from headrace.kernels.cuda_launch import device_copy, empty_like, flat, launch

NUMBERS = ("float32", "float64", "int32", "int64")


@cuda.jit
def _add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


class Sum(CpuSum):
    """The CPU kernel's dispatch (a list of tensors, or of tensor arrays added position by
    position), inherited: it runs on the CPU's hot path, so it stays compiled there, and its
    cpdef ``dense`` resolves to this class's device sum."""

    def dense(self, xs):
        """The sum of a list of device arrays (the dense case, and each array position)."""
        dtype = np.dtype(xs[0].dtype)
        for a in xs[1:]:
            if np.dtype(a.dtype) != dtype:
                raise TypeError(f"sum: inputs differ in dtype: {dtype.name} and "
                                f"{np.dtype(a.dtype).name}")
        if dtype.name not in NUMBERS:
            raise TypeError(f"sum: dtype {dtype.name} not supported "
                            f"(float32, float64, int32, int64)")
        shaped = [a for a in xs if a.size != 0] or xs[:1]
        ref = shaped[0]
        for a in shaped:
            if tuple(a.shape) != tuple(ref.shape):
                raise ValueError(f"sum: inputs differ in shape: {list(ref.shape)} and "
                                 f"{list(a.shape)}")
        if len(shaped) == 1:
            return device_copy(ref)
        out = empty_like(ref)
        n, o = out.size, flat(out)
        launch(_add, n, flat(shaped[0]), flat(shaped[1]), o)
        for a in shaped[2:]:
            launch(_add, n, o, flat(a), o)
        return out


KERNELS = [("sum", Sum, NUMBERS)]
