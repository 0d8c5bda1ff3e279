"""References and samples: reshape2, flatten_contiguous_range and their grad ops."""
import math

import numpy as np

from ._util import data, int_tensor


def _new_shape(x_shape, shape):
    """0 copies X's dim at that index; one -1 takes what the given dims leave, counting only
    the dims not copied with 0 (so a 0-size X still infers)."""
    dims = [x_shape[i] if d == 0 else d for i, d in enumerate(shape)]
    if -1 in shape:
        i = shape.index(-1)
        rest_x = math.prod(d for j, d in enumerate(x_shape) if not (j < len(shape) and
                                                                   shape[j] == 0))
        rest_out = math.prod(d for d in shape if d > 0)
        assert rest_x % rest_out == 0, (x_shape, shape)
        dims[i] = rest_x // rest_out
    return dims


def reshape2(inputs, attrs):
    x = data(inputs["X"])
    if inputs.get("ShapeTensor"):
        shape = [int(data(t).reshape(-1)[0]) for t in inputs["ShapeTensor"]]
    elif inputs.get("Shape") is not None:
        shape = [int(v) for v in data(inputs["Shape"]).reshape(-1)]
    else:
        shape = list(attrs["shape"])
    return {"Out": x.reshape(_new_shape(x.shape, shape)),
            "XShape": np.empty((0,) + x.shape, x.dtype)}


def flatten_contiguous_range(inputs, attrs):
    x = data(inputs["X"])
    dims = list(x.shape) or [1]
    start, stop = attrs.get("start_axis", 1), attrs.get("stop_axis", 1)
    start, stop = start % len(dims), stop % len(dims)
    out = dims[:start] + [math.prod(dims[start:stop + 1])] + dims[stop + 1:]
    return {"Out": x.reshape(out), "XShape": np.empty((0,) + x.shape, x.dtype)}


def sample_reshape2(rng, dtype):
    x = rng.standard_normal((2, 3, 4)).astype(dtype)
    shape = [[6, 4], [0, -1], [4, -1, 2], [-1], [0, 3, 2, 2]][rng.integers(5)]
    kind = rng.integers(3)
    if kind == 0:
        return {"X": x}, {"shape": shape}
    if kind == 1:
        return {"X": x, "Shape": int_tensor(rng, shape)}, {"shape": []}
    return {"X": x, "ShapeTensor": [int_tensor(rng, [d]) for d in shape]}, {"shape": []}


def sample_flatten_contiguous_range(rng, dtype):
    x = rng.standard_normal((2, 3, 4, 5)).astype(dtype)
    start, stop = [(1, 1), (1, -1), (0, 2), (-3, -2), (0, 3)][rng.integers(5)]
    return {"X": x}, {"start_axis": start, "stop_axis": stop}


def reshape_grad(inputs, attrs):
    """reshape2_grad / flatten_contiguous_range_grad: Out@GRAD with X's shape (XShape[1:])."""
    x_shape = data(inputs["XShape"]).shape[1:]
    return {"X@GRAD": data(inputs["Out@GRAD"]).reshape(x_shape)}


def sample_reshape2_grad(rng, dtype):
    inputs, attrs = sample_reshape2(rng, dtype)
    x = inputs["X"]
    out_shape = reshape2(inputs, attrs)["Out"].shape
    shape = list(out_shape) if rng.random() < 0.5 else list(attrs["shape"])
    return ({"XShape": np.empty((0,) + x.shape, dtype),
             "Out@GRAD": rng.standard_normal(out_shape).astype(dtype)}, {"shape": shape})


def sample_flatten_contiguous_range_grad(rng, dtype):
    inputs, attrs = sample_flatten_contiguous_range(rng, dtype)
    x = inputs["X"]
    out_shape = flatten_contiguous_range(inputs, attrs)["Out"].shape
    return ({"XShape": np.empty((0,) + x.shape, dtype),
             "Out@GRAD": rng.standard_normal(out_shape).astype(dtype)}, attrs)


REFERENCES = {"reshape2": reshape2, "flatten_contiguous_range": flatten_contiguous_range,
              "reshape2_grad": reshape_grad, "flatten_contiguous_range_grad": reshape_grad}
SAMPLES = {"reshape2": sample_reshape2,
           "flatten_contiguous_range": sample_flatten_contiguous_range,
           "reshape2_grad": sample_reshape2_grad,
           "flatten_contiguous_range_grad": sample_flatten_contiguous_range_grad}
