"""elementwise_add/sub/mul/div/max/min/pow on CUDA, with Paddle's ``axis`` broadcasting (the
gradients are in elementwise_grad.py).

One thread per output element; the shapes are aligned on the host by the shared
``_broadcast.broadcast`` (dims merged as the CPU kernel's walk), broadcast dims have stride 0,
so the same kernel serves equal shapes and every broadcast pattern. Semantics are the CPU
kernel's: int32/int64 for every op but pow; integer division truncates toward zero, wraps
INT_MIN / -1 to INT_MIN, and refuses a 0 divisor; max/min propagate NaN from either side.

Host reads: none of values. An integer division's 0 divisor is found in the kernel and goes
to a one-element device flag (atomic min of its output position), read once at the end of the
executor's run, only to raise the CPU kernel's ValueError.
"""
from numba import cuda

from headrace.devices.cuda import current_stream   # the running executor's stream
from headrace.kernels.cuda_launch import check_flag, flat, grid, new_flag

from ._broadcast import binary_kernel, broadcast, offsets, same_dtypes

FLOATS = ("float32", "float64")
NUMBERS = ("float32", "float64", "int32", "int64")


@cuda.jit
def _int_div(x, y, out, dims, sx, sy, nd, bad):
    # C's truncating division (Python's // floors: step back toward zero when the signs
    # differ and it did not divide exactly); b == -1 negates with wraparound, so INT_MIN / -1
    # is INT_MIN as on the CPU. A 0 divisor goes to the flag.
    i = cuda.grid(1)
    if i < out.size:
        ox, oy = offsets(i, dims, sx, sy, nd)
        a = x[ox]
        b = y[oy]
        if b == 0:
            cuda.atomic.min(bad, 0, i)
            out[i] = 0
        elif b == -1:
            out[i] = 0 - a
        else:
            q = a // b
            if q * b != a and (a < 0) != (b < 0):
                q += 1
            out[i] = q


def _max(a, b):
    return a if a >= b or a != a else b


def _min(a, b):
    return a if a <= b or a != a else b


_FUNCS = {
    "elementwise_add": lambda a, b: a + b,
    "elementwise_sub": lambda a, b: a - b,
    "elementwise_mul": lambda a, b: a * b,
    "elementwise_div": lambda a, b: a / b,      # floats only: ints take _int_div
    "elementwise_max": _max,
    "elementwise_min": _min,
    "elementwise_pow": lambda a, b: a ** b,     # float32 stays float32 (powf), as the CPU's
}
_DTYPES = {name: FLOATS if name == "elementwise_pow" else NUMBERS for name in _FUNCS}
class Elementwise:
    def __init__(self, name, attrs, info=None):
        self.name, self.axis, self.info = name, attrs.get("axis", -1), info
        self.kernel = binary_kernel(_FUNCS[name])

    def __call__(self, x, y):
        same_dtypes(self.name, x, y, _DTYPES[self.name])
        shape, dims, sx, sy, nd = broadcast(x.shape, y.shape, self.axis, self.name)
        out = cuda.device_array(shape, dtype=x.dtype, stream=current_stream())
        n = out.size
        if n == 0:
            return (out,)
        blocks, threads = grid(n)
        stream = current_stream()
        # dims/strides are tuples: they go by value in the launch (a NumPy array would be
        # copied to the device and back on every call: tests/test_cuda_copies.py).
        if self.name == "elementwise_div" and x.dtype.kind == "i":
            bad = new_flag(n)
            _int_div[blocks, threads, stream](flat(x), flat(y), flat(out), dims, sx, sy, nd,
                                              bad)

            def report(pos):
                return ValueError(f"{self.name}: integer division by zero (Y holds a 0)")
            check_flag(bad, n, report, self.info)
        else:
            self.kernel[blocks, threads, stream](flat(x), flat(y), flat(out), dims, sx, sy, nd)
        return (out,)


def _maker(name):
    def make(attrs, info=None):
        return Elementwise(name, attrs, info)
    make.__name__ = name
    return make


KERNELS = [(name, _maker(name), _DTYPES[name]) for name in _FUNCS]
