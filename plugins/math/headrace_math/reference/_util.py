"""Helpers the reference modules share (the underscore keeps it out of MODULES' sense)."""
import numpy as np

# Wire codes of the VarType dtypes the reductions' in_dtype/out_dtype may name.
VARTYPE_DTYPES = {0: "bool", 1: "int16", 2: "int32", 3: "int64", 4: "float16", 5: "float32",
                  6: "float64", 20: "uint8", 21: "int8"}


def f64(x):
    """``x`` in float64 for the computation (the kernels compute floats in double too)."""
    return np.asarray(x, dtype=np.float64)


def like(value, x):
    """``value`` rounded once to ``x``'s dtype, as an ndarray of ``x``'s kind."""
    return np.asarray(value).astype(np.asarray(x).dtype)


def paddle_align(x, y, axis):
    """X and Y reshaped so that NumPy broadcasting follows Paddle's ``axis`` rule: the
    lower-rank operand's dims start at dim ``axis`` of the other (its trailing 1s that would
    stick out are dropped first); axis == -1 or equal ranks is NumPy's trailing rule."""
    x, y = np.asarray(x), np.asarray(y)
    if axis == -1 or x.ndim == y.ndim:
        return x, y
    big, small = (x, y) if x.ndim > y.ndim else (y, x)
    dims = list(small.shape)
    while len(dims) > 1 and dims[-1] == 1 and axis + len(dims) > big.ndim:
        dims.pop()
    if not 0 <= axis <= big.ndim - len(dims):
        raise ValueError(f"axis={axis} does not align {small.shape} inside {big.shape}")
    small = small.reshape(dims + [1] * (big.ndim - axis - len(dims)))
    return (big, small) if x.ndim > y.ndim else (small, big)


def fattr(attrs, name, default):
    """A "float" attribute as the op sees it: Fluid stores these as 32-bit floats, so 0.1
    arrives as float32(0.1) and a float64 computation must use that value."""
    return float(np.float32(attrs.get(name, default)))
