"""assign_value's constant, built and checked once when a kernel is made (each value converted
C-style but checked, see headrace.kernels.scalars); shared by the CPU and CUDA kernels."""
import numpy as np

from headrace import dtypes as _dt
from headrace.kernels.scalars import checked_scalar

from ...ops.assign_value import VALUE_ATTRS   # dtype -> the attribute holding its values


def constant(attrs):
    """The NumPy array the attributes describe (dtype, shape, the matching values list)."""
    name = _dt.from_proto(attrs["dtype"])
    if name not in VALUE_ATTRS:
        raise TypeError(f"assign_value: dtype {attrs['dtype']} ({name}) is not one of "
                        + ", ".join(VALUE_ATTRS))
    key = VALUE_ATTRS[name]
    shape = [int(d) for d in attrs["shape"]]
    values = list(attrs.get(key, []))
    n = 1
    for d in shape:
        if d < 0:
            raise ValueError(f"assign_value: shape {shape} has a negative dim")
        n *= d
    if len(values) != n:
        raise ValueError(f"assign_value: {key} holds {len(values)} values, shape {shape} "
                         f"needs {n}")
    dtype = np.dtype(name)
    return np.array([checked_scalar(v, dtype, "assign_value") for v in values],
                    dtype=dtype).reshape(shape)
