"""References and samples: one_hot_v2."""
import numpy as np

from headrace import dtypes

from ._util import data


def one_hot_v2(inputs, attrs):
    ids = np.asarray(data(inputs["X"])).astype(np.int64)
    depth = attrs["depth"]
    if inputs.get("depth_tensor") is not None:
        depth = int(np.asarray(data(inputs["depth_tensor"])).reshape(-1)[0])
    eye = np.eye(depth, dtype=dtypes.from_proto(attrs["dtype"]))
    out = np.zeros(ids.shape + (depth,), eye.dtype)
    ok = (ids >= 0) & (ids < depth)
    out[ok] = eye[ids[ok]]
    return {"Out": out}


def sample_one_hot_v2(rng, dtype):
    depth = int(rng.integers(1, 6))
    shape = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 3)))]
    allow = bool(rng.random() < 0.3)
    ids = rng.integers(-1 if allow else 0, depth + (1 if allow else 0), size=shape)
    inputs = {"X": ids.astype(rng.choice(["int32", "int64"]))}
    attrs = {"dtype": dtypes.to_proto(dtype), "allow_out_of_range": allow}
    if rng.random() < 0.3:
        inputs["depth_tensor"] = np.array([depth], np.int32)
    else:
        attrs["depth"] = depth
    return inputs, attrs


REFERENCES = {"one_hot_v2": one_hot_v2}
SAMPLES = {"one_hot_v2": sample_one_hot_v2}
