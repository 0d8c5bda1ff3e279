"""Initializers: objects that append a variable's initializing op to the startup program.

``Constant(value)(var)`` appends ``fill_constant`` writing ``var`` to the global block of the
default startup program (or the ``block`` given), declaring ``var`` there first when it is
a variable of another program (a main-program parameter gets its startup twin: same name,
shape, dtype). The ops: ``fill_constant`` (Constant), ``uniform_random`` (Uniform, Xavier and
MSRA with ``uniform=True``), ``gaussian_random`` (Normal, Xavier/MSRA normal), ``assign_value``
(NumpyArrayInitializer).

Seeds: the random ops carry the initializer's ``seed`` as their ``seed`` attribute. Seed 0 (the
default) means "from the program": as in Fluid, the startup program's ``random_seed`` is
written into the op when it is appended (a seed derived from it and the op's rank, see
framework/seeds.py), so a seeded startup program draws the same values on every run and in
any process that parses it, while two parameters of one shape still get different values;
with ``random_seed`` 0 as well the attribute stays 0 and the draw is nondeterministic.
"""
import math

import numpy as np

from . import dtypes
from .errors import LayerError
from .framework import Parameter, Variable, default_startup_program

__all__ = ["Initializer", "Constant", "Uniform", "Normal", "Xavier", "MSRA",
           "NumpyArrayInitializer", "ConstantInitializer", "UniformInitializer",
           "NormalInitializer", "XavierInitializer", "MSRAInitializer"]


def _number(cls, name, value, minimum=None, above=None):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
            or not math.isfinite(float(value)):
        raise LayerError(f"{cls}: argument '{name}' must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise LayerError(f"{cls}: argument '{name}' must be >= {minimum}, got {value!r}")
    if above is not None and value <= above:
        raise LayerError(f"{cls}: argument '{name}' must be > {above}, got {value!r}")
    return float(value)


def _seed(cls, seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or \
            not 0 <= int(seed) < 2**31:
        raise LayerError(f"{cls}: argument 'seed' must be an int in [0, 2**31), got {seed!r}")
    return int(seed)


class Initializer:
    """Base class: ``init(var, block=None)`` appends the op that initializes ``var``."""

    def __call__(self, var, block=None):
        if not isinstance(var, Variable):
            raise LayerError(f"{type(self).__name__}: expected the Variable to initialize, "
                             f"got {type(var).__name__}")
        if block is None:
            block = default_startup_program().global_block()
        target = self._target(var, block)
        shape = list(target.shape)
        if any(d < 0 for d in shape):
            raise LayerError(f"{type(self).__name__}: variable '{var.name}' needs a fully known "
                             f"shape to be initialized, found {shape}")
        return self._append(target, block, shape)

    @staticmethod
    def _target(var, block):
        """``var`` itself if it lives in ``block``'s program, else its twin declared there."""
        if var.block.program is block.program:
            return var
        if isinstance(var, Parameter):
            return block.create_parameter(var.name, var.shape, var.dtype, var.trainable,
                                          var.optimize_attr, var.regularizer, var.gradient_clip,
                                          var.initializer, var.lod_level)
        return block.create_var(name=var.name, shape=var.shape, dtype=var.dtype,
                                lod_level=var.lod_level, persistable=True)

    def _append(self, var, block, shape):
        raise NotImplementedError

    @staticmethod
    def _dtype(var):
        return int(dtypes.to_proto(var.dtype))

    def __repr__(self):
        args = ", ".join(f"{k.lstrip('_')}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Constant(Initializer):
    """Every element = ``value`` (``fill_constant``)."""

    def __init__(self, value=0.0, force_cpu=False):
        self._value = _number("Constant", "value", value)
        self._force_cpu = bool(force_cpu)

    def _append(self, var, block, shape):
        return block.append_op("fill_constant", {}, {"Out": var},
                               {"shape": shape, "dtype": self._dtype(var), "value": self._value,
                                "force_cpu": self._force_cpu})


class Uniform(Initializer):
    """Samples of U[low, high) (``uniform_random``)."""

    def __init__(self, low=-1.0, high=1.0, seed=0):
        self._low = _number("Uniform", "low", low)
        self._high = _number("Uniform", "high", high)
        if self._low > self._high:
            raise LayerError(f"Uniform: argument 'low' ({low}) must not exceed 'high' ({high})")
        self._seed = _seed("Uniform", seed)

    def _append(self, var, block, shape):
        return block.append_op("uniform_random", {}, {"Out": var},
                               {"shape": shape, "dtype": self._dtype(var), "min": self._low,
                                "max": self._high, "seed": self._seed})


class Normal(Initializer):
    """Samples of N(loc, scale^2) (``gaussian_random``)."""

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        self._mean = _number("Normal", "loc", loc)
        self._std = _number("Normal", "scale", scale, minimum=0.0)
        self._seed = _seed("Normal", seed)

    def _append(self, var, block, shape):
        return block.append_op("gaussian_random", {}, {"Out": var},
                               {"shape": shape, "dtype": self._dtype(var), "mean": self._mean,
                                "std": self._std, "seed": self._seed})


def compute_fans(shape):
    """(fan_in, fan_out) of a weight: [in, out] for fc weights, [out, in/groups, kh, kw] for
    convolution filters (times the receptive field), [n] for vectors."""
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


class Xavier(Initializer):
    """Glorot & Bengio: U[-l, l] with l = sqrt(6 / (fan_in + fan_out)), or N(0, 2 / (fan_in +
    fan_out)) with ``uniform=False``. ``fan_in``/``fan_out`` default to the variable's."""

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self._uniform = bool(uniform)
        self._fan_in = None if fan_in is None else _number("Xavier", "fan_in", fan_in, above=0)
        self._fan_out = None if fan_out is None else _number("Xavier", "fan_out", fan_out,
                                                             above=0)
        self._seed = _seed("Xavier", seed)

    def _append(self, var, block, shape):
        f_in, f_out = compute_fans(shape)
        fan_in = f_in if self._fan_in is None else self._fan_in
        fan_out = f_out if self._fan_out is None else self._fan_out
        if self._uniform:
            limit = math.sqrt(6.0 / float(fan_in + fan_out))
            return Uniform(-limit, limit, self._seed)._append(var, block, shape)
        std = math.sqrt(2.0 / float(fan_in + fan_out))
        return Normal(0.0, std, self._seed)._append(var, block, shape)


class MSRA(Initializer):
    """He et al.: U[-l, l] with l = sqrt(6 / fan_in), or N(0, 2 / fan_in) with
    ``uniform=False``."""

    def __init__(self, uniform=True, fan_in=None, seed=0):
        self._uniform = bool(uniform)
        self._fan_in = None if fan_in is None else _number("MSRA", "fan_in", fan_in, above=0)
        self._seed = _seed("MSRA", seed)

    def _append(self, var, block, shape):
        fan_in = compute_fans(shape)[0] if self._fan_in is None else self._fan_in
        if self._uniform:
            limit = math.sqrt(6.0 / float(fan_in))
            return Uniform(-limit, limit, self._seed)._append(var, block, shape)
        return Normal(0.0, math.sqrt(2.0 / float(fan_in)), self._seed)._append(var, block, shape)


# dtype -> the assign_value attribute that carries its values
_VALUE_ATTRS = {"float32": "fp32_values", "float16": "fp32_values", "float64": "fp64_values",
                "int32": "int32_values", "int64": "int64_values", "bool": "bool_values"}


class NumpyArrayInitializer(Initializer):
    """The values of a NumPy array (``assign_value``); its shape must be the variable's."""

    def __init__(self, value):
        if not isinstance(value, np.ndarray):
            raise LayerError(f"NumpyArrayInitializer: argument 'value' must be a numpy.ndarray, "
                             f"got {type(value).__name__}")
        self._value = value

    def _append(self, var, block, shape):
        if tuple(self._value.shape) != tuple(shape):
            raise LayerError(f"NumpyArrayInitializer: the array's shape {list(self._value.shape)}"
                             f" differs from variable '{var.name}''s shape {shape}")
        attr = _VALUE_ATTRS.get(var.dtype)
        if attr is None:
            raise LayerError(f"NumpyArrayInitializer: variable '{var.name}' has dtype "
                             f"{var.dtype}; supported: {', '.join(_VALUE_ATTRS)}")
        values = self._value.astype(dtypes.to_numpy(var.dtype)).ravel().tolist()
        return block.append_op("assign_value", {}, {"Out": var},
                               {"shape": shape, "dtype": self._dtype(var), attr: values})


# Fluid's long names.
ConstantInitializer = Constant
UniformInitializer = Uniform
NormalInitializer = Normal
XavierInitializer = Xavier
MSRAInitializer = MSRA
