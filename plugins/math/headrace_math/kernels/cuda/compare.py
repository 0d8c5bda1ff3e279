"""less_than, less_equal, greater_than, greater_equal, equal, not_equal -> bool on CUDA,
mirroring kernels/cpu/compare.pyx.

One thread per output element, with the elementwise ops' broadcasting (Paddle's ``axis``
rule) from the shared ``_broadcast`` helpers. NaN compares as in C and NumPy: only != holds.
Nothing is read on the host.
"""
from numba import cuda

from headrace.devices.cuda import current_stream   # the running executor's stream
from headrace.kernels.cuda_launch import flat, grid

from ._broadcast import binary_kernel, broadcast, same_dtypes

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64")


_FUNCS = {
    "less_than": lambda a, b: a < b,
    "less_equal": lambda a, b: a <= b,
    "greater_than": lambda a, b: a > b,
    "greater_equal": lambda a, b: a >= b,
    "equal": lambda a, b: a == b,
    "not_equal": lambda a, b: a != b,
}
class Compare:
    def __init__(self, name, attrs):
        self.name, self.axis = name, attrs.get("axis", -1)
        self.kernel = binary_kernel(_FUNCS[name])

    def __call__(self, x, y):
        same_dtypes(self.name, x, y, DTYPES)
        shape, dims, sx, sy, nd = broadcast(x.shape, y.shape, self.axis, self.name)
        stream = current_stream()
        out = cuda.device_array(shape, dtype="bool", stream=stream)
        if out.size:
            blocks, threads = grid(out.size)
            self.kernel[blocks, threads, stream](flat(x), flat(y), flat(out), dims, sx, sy, nd)
        return (out,)


def _maker(name):
    def make(attrs, info=None):
        return Compare(name, attrs)
    make.__name__ = name
    return make


KERNELS = [(name, _maker(name), DTYPES) for name in _FUNCS]
