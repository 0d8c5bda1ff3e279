"""References and samples: stack, stack_grad."""
import numpy as np

from ._util import data


def stack(inputs, attrs):
    xs = [data(x) for x in inputs["X"]]
    axis = attrs["axis"] % (xs[0].ndim + 1)
    # Y[..., i, ...] = X[i], written out with moveaxis rather than np.stack
    y = np.empty((len(xs),) + xs[0].shape, xs[0].dtype)
    for i, x in enumerate(xs):
        y[i] = x
    return {"Y": np.moveaxis(y, 0, axis)}


def sample_stack(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 4)))]
    n = int(rng.integers(1, 4))
    rank = len(shape) + 1
    return ({"X": [rng.standard_normal(shape).astype(dtype) for _ in range(n)]},
            {"axis": int(rng.integers(-rank, rank))})


def stack_grad(inputs, attrs):
    dy = data(inputs["Y@GRAD"])
    moved = np.moveaxis(dy, attrs["axis"] % dy.ndim, 0)
    return {"X@GRAD": [moved[i] for i in range(moved.shape[0])]}


def sample_stack_grad(rng, dtype):
    inputs, attrs = sample_stack(rng, dtype)
    y = stack(inputs, attrs)["Y"]
    return {"Y@GRAD": rng.standard_normal(y.shape).astype(dtype)}, attrs


REFERENCES = {"stack": stack, "stack_grad": stack_grad}
SAMPLES = {"stack": sample_stack, "stack_grad": sample_stack_grad}
