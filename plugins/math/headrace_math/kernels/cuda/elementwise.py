"""elementwise_add/sub/mul/max/min on CUDA, with Paddle's ``axis`` broadcasting.

One thread per output element; broadcast dims have stride 0, so the same kernel serves equal
shapes and every broadcast pattern.
"""
from numba import cuda

from headrace.devices.cuda import current_stream   # the running executor's stream
from headrace.kernels.cuda_launch import grid

MAXDIM = 8


def _align(xs, ys, axis):
    nx, ny = len(xs), len(ys)
    if axis == -1 or nx == ny:
        r = max(nx, ny)
        return (1,) * (r - nx) + xs, (1,) * (r - ny) + ys
    # Paddle trims the smaller operand's trailing 1s before aligning it at axis.
    while nx > ny > 1 and ys[-1] == 1 and axis + ny > nx:
        ys, ny = ys[:-1], ny - 1
    while ny > nx > 1 and xs[-1] == 1 and axis + nx > ny:
        xs, nx = xs[:-1], nx - 1
    if nx > ny:
        return xs, (1,) * axis + ys + (1,) * (nx - ny - axis)
    return (1,) * axis + xs + (1,) * (ny - nx - axis), ys


def _strides(dims, shape):
    out, s = [0] * len(dims), 1
    for k in range(len(dims) - 1, -1, -1):
        out[k] = 0 if dims[k] == 1 and shape[k] != 1 else s
        s *= dims[k]
    return out


def _kernel(fn):
    @cuda.jit
    def k(x, y, out, dims, sx, sy, nd):
        i = cuda.grid(1)
        if i < out.size:
            rem, ox, oy = i, 0, 0
            for d in range(nd - 1, -1, -1):
                c = rem % dims[d]
                rem //= dims[d]
                ox += c * sx[d]
                oy += c * sy[d]
            out[i] = fn(x[ox], y[oy])
    return k


_FUNCS = {
    "elementwise_add": lambda a, b: a + b,
    "elementwise_sub": lambda a, b: a - b,
    "elementwise_mul": lambda a, b: a * b,
    "elementwise_max": lambda a, b: max(a, b),
    "elementwise_min": lambda a, b: min(a, b),
}
_COMPILED = {}


def _compiled(name):
    k = _COMPILED.get(name)
    if k is None:
        k = _COMPILED[name] = _kernel(cuda.jit(device=True)(_FUNCS[name]))
    return k


class Elementwise:
    def __init__(self, name, attrs, info=None):
        self.name, self.axis = name, attrs.get("axis", -1)
        self.kernel = _compiled(name)

    def __call__(self, x, y):
        if x.dtype != y.dtype:
            raise TypeError(f"{self.name}: X is {x.dtype} but Y is {y.dtype}")
        xs, ys = _align(tuple(x.shape), tuple(y.shape), self.axis)
        shape = []
        for dx, dy in zip(xs, ys):
            if dx != dy and dx != 1 and dy != 1:
                raise ValueError(f"{self.name}: X{list(x.shape)} and Y{list(y.shape)} cannot "
                                 f"be broadcast (axis={self.axis})")
            shape.append(dy if dx == 1 else dx)
        if len(shape) > MAXDIM:
            raise ValueError(f"{self.name}: more than {MAXDIM} dims on CUDA")
        out = cuda.device_array(tuple(shape), dtype=x.dtype)
        if out.size:
            pad = [1] * (MAXDIM - len(shape))
            # Tuples go by value in the launch; NumPy arrays would be copied to the device and
            # back on every call (hidden copies: tests/test_cuda_copies.py).
            dims = tuple(shape + pad)
            sx = tuple(_strides(xs, shape) + [0] * len(pad))
            sy = tuple(_strides(ys, shape) + [0] * len(pad))
            blocks, threads = grid(out.size)
            self.kernel[blocks, threads, current_stream()](
                x.reshape(-1) if x.size else x, y.reshape(-1), out.reshape(-1), dims, sx, sy,
                len(shape))
        return (out,)


def _maker(name):
    def make(attrs, info=None):
        return Elementwise(name, attrs, info)
    return make


KERNELS = [(name, _maker(name), ("float32", "float64")) for name in _FUNCS]
