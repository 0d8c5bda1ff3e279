"""one_hot_v2 on CUDA: one thread per output element (id row, class), 1 where the class is the
id. An id outside [0, depth) is a zero row with allow_out_of_range, else its position goes to
the run's bad-index flag and the CPU kernel's IndexError is raised from it at the end of the
run. Exception to "values stay on the device": depth_tensor is shape metadata, read on the
host as the CPU kernel reads it."""
import numpy as np
from numba import cuda

from headrace import dtypes as dt
from headrace.kernels.cuda_launch import device_empty, flat, launch, new_flag

from ._common import one_int, prod
from .gather import int_index, raise_bad, var_name


@cuda.jit
def _one_hot(ids, out, depth, total, allow, bad):
    t = cuda.grid(1)
    if t < total:
        i = t // depth
        c = t % depth
        v = ids[i]
        if not allow and (v < 0 or v >= depth):
            if c == 0:
                cuda.atomic.min(bad, 0, i)
        out[t] = 1 if v == c else 0


class OneHotV2:
    def __init__(self, attrs, info=None):
        self.depth, self.allow = attrs["depth"], bool(attrs["allow_out_of_range"])
        self.dtype = np.dtype(dt.from_proto(attrs["dtype"]))
        self.who = var_name(info, "X")
        self.info = info

    def __call__(self, x, depth_tensor=None):
        op = "one_hot_v2"
        depth = self.depth if depth_tensor is None else one_int(depth_tensor, op,
                                                                  "depth_tensor")
        if depth < 1:
            raise ValueError(f"{op}: depth must be >= 1, got {depth}")
        int_index(x, op, self.who)
        n = prod(x.shape)
        out = device_empty(tuple(x.shape) + (depth,), self.dtype)
        if n:
            bad = new_flag(n)
            launch(_one_hot, n * depth, flat(x), flat(out), depth, n * depth, self.allow, bad)
            raise_bad(bad, n, x, op, self.who, lambda pos: ("depth", depth), self.info)
        return (out,)


KERNELS = [("one_hot_v2", OneHotV2, ("int32", "int64"))]
