"""References and samples: squeeze2, unsqueeze2 and their grad ops."""
import numpy as np

from ._util import data, int_tensor


def squeeze2(inputs, attrs):
    x = data(inputs["X"])
    axes = attrs.get("axes", [])
    if axes:
        # np.squeeze refuses dims other than 1; Paddle keeps them
        drop = tuple(sorted({a % x.ndim for a in axes if x.shape[a] == 1}))
        out = np.squeeze(x, axis=drop) if drop else x
    else:
        out = np.squeeze(x)
    return {"Out": out, "XShape": np.empty((0,) + x.shape, x.dtype)}


def unsqueeze2(inputs, attrs):
    x = data(inputs["X"])
    if inputs.get("AxesTensor") is not None:
        axes = [int(v) for v in data(inputs["AxesTensor"]).reshape(-1)]
    elif inputs.get("AxesTensorList"):
        axes = [int(data(t).reshape(-1)[0]) for t in inputs["AxesTensorList"]]
    else:
        axes = attrs.get("axes", [])
    out = x
    for a in axes:
        out = np.expand_dims(out, a)  # one at a time, each in the rank reached so far
    return {"Out": out, "XShape": np.empty((0,) + x.shape, x.dtype)}


def sample_squeeze2(rng, dtype):
    shape = [int(rng.choice([1, 1, 2, 3])) for _ in range(int(rng.integers(1, 5)))]
    rank = len(shape)
    axes = sorted(rng.choice(rank, size=int(rng.integers(0, rank + 1)), replace=False).tolist())
    axes = [a - rank if rng.random() < 0.3 else a for a in axes]
    return {"X": rng.standard_normal(shape).astype(dtype)}, {"axes": axes}


def sample_unsqueeze2(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 4)))]
    axes, rank = [], len(shape)
    for _ in range(int(rng.integers(1, 4))):
        axes.append(int(rng.integers(-rank - 1, rank + 1)))
        rank += 1
    inputs = {"X": rng.standard_normal(shape).astype(dtype)}
    kind = rng.integers(3)
    if kind == 1:
        inputs["AxesTensor"] = int_tensor(rng, axes)
        return inputs, {"axes": []}
    if kind == 2:
        inputs["AxesTensorList"] = [int_tensor(rng, [a]) for a in axes]
        return inputs, {"axes": []}
    return inputs, {"axes": axes}


def squeeze_grad(inputs, attrs):
    """squeeze2_grad / unsqueeze2_grad: Out@GRAD with X's shape (XShape[1:])."""
    return {"X@GRAD": data(inputs["Out@GRAD"]).reshape(data(inputs["XShape"]).shape[1:])}


def _grad_sample(fwd, sample):
    def make(rng, dtype):
        inputs, attrs = sample(rng, dtype)
        out = fwd(inputs, attrs)["Out"]
        # (unsqueeze2_grad has no axes inputs: XShape gives X's shape)
        return ({"XShape": np.empty((0,) + inputs["X"].shape, dtype),
                 "Out@GRAD": rng.standard_normal(out.shape).astype(dtype)}, attrs)
    return make


REFERENCES = {"squeeze2": squeeze2, "unsqueeze2": unsqueeze2, "squeeze2_grad": squeeze_grad,
              "unsqueeze2_grad": squeeze_grad}
SAMPLES = {"squeeze2": sample_squeeze2, "unsqueeze2": sample_unsqueeze2,
           "squeeze2_grad": _grad_sample(squeeze2, sample_squeeze2),
           "unsqueeze2_grad": _grad_sample(unsqueeze2, sample_unsqueeze2)}
