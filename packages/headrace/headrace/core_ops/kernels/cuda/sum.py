"""sum on CUDA: the elementwise sum of N same-shaped inputs (how gradient contributions add
up), or of N tensor arrays position by position.

As on the CPU the first two inputs are added into a new output in one launch and each further
input is added into it in place (one launch per input, one thread per element), so the result
equals ((x0 + x1) + x2) + ... exactly. Inputs with no elements are skipped (absent
contributions), unless every input is empty.
"""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import device_copy, empty_like, flat, launch
from headrace.runtime.tensor import Tensor, TensorArray

NUMBERS = ("float32", "float64", "int32", "int64")


@cuda.jit
def _add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


class Sum:
    def __init__(self, attrs=None, info=None):
        pass

    def __call__(self, xs):
        if not isinstance(xs, (list, tuple)) or not xs:
            raise ValueError(f"sum: X must be a non-empty list of tensors, got {xs!r:.80}")
        arrays = sum(1 for v in xs if isinstance(v, list))
        if arrays == len(xs):
            return (_sum_arrays(self, xs),)
        if arrays:
            raise TypeError("sum: X mixes tensor arrays with tensors")
        return (self.dense(list(xs)),)

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


def _sum_arrays(kernel, xs):
    """Tensor arrays add up position by position: Out has the longest input's length, and
    position i sums the inputs that hold a non-empty tensor there (LoD of the first of them);
    a position none of them holds stays empty (None)."""
    out = TensorArray()
    for i in range(max(len(a) for a in xs)):
        parts = [a[i] for a in xs if i < len(a) and a[i] is not None]
        if not parts:
            out.append(None)
            continue
        datas = [p.data if isinstance(p, Tensor) else p for p in parts]
        full = [k for k, d in enumerate(datas) if getattr(d, "size", 1) != 0]
        first = parts[full[0]] if full else parts[0]
        out.append(Tensor(kernel.dense(datas), getattr(first, "lod", None)))
    return out


KERNELS = [("sum", Sum, NUMBERS)]
