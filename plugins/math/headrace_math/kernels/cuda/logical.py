"""logical_and, logical_or, logical_xor (NumPy broadcasting: these ops have no ``axis``) and
logical_not on bool, on CUDA, mirroring kernels/cpu/logical.pyx.

One thread per output element; the binary ops broadcast through the shared ``_broadcast``
helpers with the trailing alignment. Nothing is read on the host.
"""
from numba import cuda

from headrace.devices.cuda import current_stream   # the running executor's stream
from headrace.kernels.cuda_launch import empty_like, flat, launch

from ._broadcast import binary_kernel, broadcast


@cuda.jit
def _not(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] == 0


# Each side read as (value != 0), as the CPU kernel reads its bool bytes.
_FUNCS = {
    "logical_and": lambda a, b: (a != 0) and (b != 0),
    "logical_or": lambda a, b: (a != 0) or (b != 0),
    "logical_xor": lambda a, b: (a != 0) != (b != 0),
}
def _check_bool(name, slot, a):
    if str(a.dtype) != "bool":
        raise TypeError(f"{name}: {slot} has dtype {a.dtype}, expected bool")


class Logical:
    def __init__(self, name):
        self.name = name
        self.kernel = binary_kernel(_FUNCS[name])

    def __call__(self, x, y):
        _check_bool(self.name, "X", x)
        _check_bool(self.name, "Y", y)
        shape, dims, sx, sy, nd = broadcast(x.shape, y.shape, -1, self.name)
        out = cuda.device_array(shape, dtype="bool", stream=current_stream())
        launch(self.kernel, out.size, flat(x), flat(y), flat(out), dims, sx, sy, nd)
        return (out,)


class LogicalNot:
    def __init__(self, attrs=None, info=None):
        pass

    def __call__(self, x):
        _check_bool("logical_not", "X", x)
        out = empty_like(x)
        launch(_not, out.size, flat(x), flat(out))
        return (out,)


def _maker(name):
    def make(attrs, info=None):
        return Logical(name)
    make.__name__ = name
    return make


KERNELS = [(name, _maker(name), ("bool",)) for name in _FUNCS] + [
    ("logical_not", LogicalNot, ("bool",))]
