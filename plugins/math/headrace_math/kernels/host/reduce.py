"""Reduction host plan shared by the CPU and CUDA kernels: the attributes (dim, keep_dim,
reduce_all, in_dtype/out_dtype), the normalized reduced dims, Out's shape, the runs of alike
dims, and the op table. The kernels call these once per X shape (their plans are cached)."""
from headrace import dtypes

FLOATS = ("float32", "float64")
NUMBERS = FLOATS + ("int32", "int64")

# Op codes (the CPU kernel's cdef enum lists them in this order).
SUM, MEAN, MAX, MIN, PROD, ALL, ANY = range(7)


def np_dtype(code):
    """The NumPy dtype of an in_dtype/out_dtype attribute, None for -1 (unset)."""
    return None if code == -1 else dtypes.to_numpy(code)


def reduce_attrs(attrs):
    """(keep_dim, the dims to reduce or None for all of them, in_dtype, out_dtype)."""
    dims = attrs.get("dim", [])
    return (attrs.get("keep_dim", False),
            None if attrs.get("reduce_all", False) or not dims else list(dims),
            np_dtype(attrs.get("in_dtype", -1)), np_dtype(attrs.get("out_dtype", -1)))


def normalized_dims(dims, nd, name):
    """The sorted reduced dims of an X of rank ``nd`` (``dims`` None: all of them)."""
    if dims is None or nd == 0:
        return list(range(nd))
    seen = set()
    for d in dims:
        if not -nd <= d < nd:
            raise ValueError(f"{name}: dim {d} is out of range for X of rank {nd} "
                             f"(dim={dims})")
        if d % nd in seen:
            raise ValueError(f"{name}: dim={dims} names dimension {d % nd} twice")
        seen.add(d % nd)
    return sorted(seen)


def out_shape(dims, red, keep_dim):
    """Out's shape for X of shape ``dims`` reduced along ``red``."""
    if keep_dim:
        return tuple(1 if k in red else d for k, d in enumerate(dims))
    # Nothing left is 0-D (Paddle 3; Fluid programs declare [1]).
    return tuple(d for k, d in enumerate(dims) if k not in red)


def runs(dims, red):
    """Merged runs of alike dims (all reduced or all kept), size-1 dims dropped: a list of
    [size, element stride of the run's last dim in a contiguous X, reduced]."""
    nd = len(dims)
    strides = [1] * nd
    for k in range(nd - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1]
    out = []
    for k in range(nd):
        if dims[k] == 1:
            continue
        is_red = k in red
        if out and out[-1][2] == is_red:
            out[-1][0] *= dims[k]
            out[-1][1] = strides[k]
        else:
            out.append([dims[k], strides[k], is_red])
    return out


def kernel_table(reduce_cls, grad_cls):
    """The KERNELS list of a device's kernels: ``reduce_cls(code, name, attrs)`` and
    ``grad_cls(code, name, attrs)`` make one op's kernel."""
    def maker(cls, code, name):
        def make(attrs, info=None):
            return cls(code, name, attrs)
        make.__name__ = name
        return make

    def mean(cls, name):
        def make(attrs, info=None):
            return cls(MEAN, name, {"reduce_all": True})
        make.__name__ = name
        return make

    ops = [("sum", SUM, NUMBERS + ("bool",), FLOATS), ("mean", MEAN, FLOATS, FLOATS),
           ("max", MAX, NUMBERS, FLOATS), ("min", MIN, NUMBERS, FLOATS),
           ("prod", PROD, NUMBERS, FLOATS), ("all", ALL, ("bool",), None),
           ("any", ANY, ("bool",), None)]
    forward = [("mean", mean(reduce_cls, "mean"), FLOATS)] + \
        [(f"reduce_{n}", maker(reduce_cls, c, f"reduce_{n}"), d) for n, c, d, _ in ops]
    grads = [("mean_grad", mean(grad_cls, "mean_grad"), FLOATS)] + \
        [(f"reduce_{n}_grad", maker(grad_cls, c, f"reduce_{n}_grad"), g)
         for n, c, _, g in ops if g]
    return forward + grads
