"""uniform_random / gaussian_random host logic shared by the CPU and CUDA kernels: the output
dtype, the attributes (checked once, when a kernel is made), the output shape from the
attribute or the shape tensors, and the [min, max) bound of the uniform draws."""
import numpy as np

from headrace import dtypes as _dt

FLOATS = ("float16", "float32", "float64")


def float_dtype(attrs, op, device):
    """The output dtype attribute as a NumPy float dtype; ``device`` ("CPU" or "CUDA") names
    the kernel in the error for another dtype."""
    name = _dt.from_proto(attrs["dtype"])
    if name not in FLOATS:
        raise TypeError(f"{op}: dtype {attrs['dtype']} ({name}) has no {device} kernel; "
                        f"supported: " + ", ".join(FLOATS))
    return np.dtype(name)


def largest_below(dtype, hi):
    """The largest value of ``dtype`` that is < hi."""
    with np.errstate(over="ignore"):
        h = dtype.type(hi)
    if float(h) >= hi:
        h = np.nextafter(h, dtype.type(-np.inf))
    return h


def out_shape(op, attr_shape, shape_tensor, shape_list, ints, ints_of_list):
    """The output shape: ShapeTensor, else ShapeTensorList, else the attribute (none of its
    dims negative); ``ints`` / ``ints_of_list`` read the tensors on the host."""
    if shape_tensor is not None:
        dims, src = ints(shape_tensor, op, "ShapeTensor"), "ShapeTensor"
    elif shape_list:
        dims, src = ints_of_list(shape_list, op, "ShapeTensorList"), "ShapeTensorList"
    else:
        dims, src = attr_shape, "attribute 'shape'"
    for d in dims:
        if d < 0:
            raise ValueError(f"{op}: the output shape from {src} has a negative dim: {dims}")
    return tuple(dims)


def uniform_attrs(attrs):
    """uniform_random's (min, max, diag_num, diag_step, diag_val), checked."""
    lo, hi = attrs["min"], attrs["max"]
    if not lo < hi:
        raise ValueError(f"uniform_random: min ({lo}) must be less than max ({hi})")
    diag_num, diag_step = attrs["diag_num"], attrs["diag_step"]
    if diag_num < 0 or diag_step < 0:
        raise ValueError(f"uniform_random: diag_num ({diag_num}) and diag_step "
                         f"({diag_step}) must be >= 0")
    return lo, hi, diag_num, diag_step, attrs["diag_val"]


def check_diagonal(diag_num, diag_step, n):
    """The diagonal diag_num / diag_step must fit an output of ``n`` elements."""
    if diag_num > 0 and (diag_num - 1) * (diag_step + 1) >= n:
        raise ValueError(f"uniform_random: diag_num={diag_num}, diag_step={diag_step} run "
                         f"past the end of an output of {n} elements")


def gaussian_attrs(attrs):
    """gaussian_random's (mean, std), checked."""
    mean, std = attrs["mean"], attrs["std"]
    if not std >= 0:
        raise ValueError(f"gaussian_random: std must be >= 0, got {std}")
    return mean, std
