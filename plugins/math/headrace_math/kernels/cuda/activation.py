"""Attribute-free activations on CUDA: one elementwise launch per op, the op's formula a
compile-time specialization of a single kernel template (one thread per element)."""
import math

from numba import cuda

from headrace.devices.cuda import current_stream   # the running executor's stream
from headrace.kernels.cuda_launch import grid


def _template(fn):
    fn = cuda.jit(device=True)(fn)

    @cuda.jit
    def k(x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = fn(x[i])
    return k


def _relu(v):
    return v if v > 0 else v * 0


def _sigmoid(v):
    # Split on the sign so exp never overflows, as the CPU kernel does.
    if v >= 0:
        return 1 / (1 + math.exp(-v))
    e = math.exp(v)
    return e / (1 + e)


def _tanh(v):
    return math.tanh(v)


def _exp(v):
    return math.exp(v)


def _square(v):
    return v * v


def _abs(v):
    return abs(v)


_FORMULAS = {"relu": _relu, "sigmoid": _sigmoid, "tanh": _tanh, "exp": _exp,
             "square": _square, "abs": _abs}
_COMPILED = {}


def _make(op_type):
    class Activation:
        def __init__(self, attrs, info=None):
            if op_type not in _COMPILED:
                _COMPILED[op_type] = _template(_FORMULAS[op_type])
            self._k = _COMPILED[op_type]

        def __call__(self, x):
            out = cuda.device_array(x.shape, dtype=x.dtype)
            if out.size:
                blocks, threads = grid(out.size)
                self._k[blocks, threads, current_stream()](x.reshape(-1), out.reshape(-1))
            return (out,)
    Activation.__name__ = Activation.__qualname__ = op_type.title().replace("_", "") + "Kernel"
    return Activation


Relu = _make("relu")
KERNELS = [(t, _make(t) if t != "relu" else Relu, ("float32", "float64")) for t in _FORMULAS]
